"""Benchmarks and shared representative workloads of the neuron backend."""
