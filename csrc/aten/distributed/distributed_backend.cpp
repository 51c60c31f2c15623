// The c10d backend for neuron tensors. It runs every collective through a host transport
// backend (PyTorch's Gloo over TCP, created by the Python side from the same store) on the
// device's communication stream, ordered after the current stream's pending work; its Work
// makes the waiting stream wait. A synchronous collective runs on the calling thread instead,
// once the current stream and the communication stream are idle. Every collective starts with
// an all-to-all of the ranks' fingerprints (FingerprintExchange) whose messages carry data:
// all-reduce, all-gather and reduce-scatter into one tensor carry their data (a larger
// all-reduce its reduce-scatter half) in it.
#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <ATen/core/ivalue.h>
#include <pybind11/chrono.h>
#include <torch/csrc/utils/pybind.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <numeric>
#include <stdexcept>
#include <string>
#include <torch/csrc/distributed/c10d/Backend.hpp>
#include <torch/csrc/distributed/c10d/PrefixStore.hpp>
#include <torch/csrc/distributed/c10d/Store.hpp>
#include <torch/csrc/distributed/c10d/Types.hpp>
#include <torch/csrc/distributed/c10d/Work.hpp>
#include <vector>

#include "aten/distributed/distributed_bindings.h"
#include "aten/distributed/distributed_exchange.h"
#include "distributed/collective_queue.h"
#include "runtime/runtime.h"

namespace openneuron::bridge {

namespace {

namespace py = pybind11;
using distributed::CollectiveQueue;
using distributed::Completion;
using Tensors = std::vector<at::Tensor>;
using HostFactory = std::function<c10::intrusive_ptr<c10d::Backend>(
    const c10::intrusive_ptr<c10d::Store>&, int, int, std::chrono::milliseconds)>;

// A c10::DistBackendError (torch.distributed.DistBackendError in Python) carrying `text`.
std::exception_ptr dist_error(const std::string& text) {
  try {
    TORCH_CHECK_WITH(DistBackendError, false, text);
  } catch (...) {
    return std::current_exception();
  }
  return nullptr;
}

bool is_neuron(const at::Tensor& tensor) {
  return tensor.device().type() == c10::DeviceType::PrivateUse1;
}

// OPENNEURON_DIST_STAGING=1 stages every device buffer through pinned host memory, as a device
// whose memory the host cannot address needs; otherwise the transport reads and writes the
// (host-addressable) device memory in place.
bool staging_forced() {
  static const bool forced = [] {
    const char* value = std::getenv("OPENNEURON_DIST_STAGING");
    return value != nullptr && std::string(value) == "1";
  }();
  return forced;
}

// Blocks the host until `completion` is done or `timeout` passed (zero: no limit), without
// holding the GIL: queued work ahead of it drops tensors that Python still refers to, which
// takes the GIL, so a caller that kept it would deadlock with the communication stream.
bool wait_without_gil(const Completion& completion, std::chrono::milliseconds timeout) {
  if (Py_IsInitialized() && PyGILState_Check()) {
    py::gil_scoped_release no_gil;
    return completion.wait_for(timeout);
  }
  return completion.wait_for(timeout);
}

// Runs `body` on the calling thread into `completion` (an exception fails it), without holding
// the GIL: releasing tensors may take it, and the transport may block.
template <typename Body>
void run_without_gil(Completion& completion, Body& body) {
  auto run = [&] {
    try {
      body();
      completion.finish();
    } catch (const std::exception& e) {
      completion.finish(e.what());
    }
  };
  if (Py_IsInitialized() && PyGILState_Check()) {
    py::gil_scoped_release no_gil;
    run();
  } else {
    run();
  }
}

// OPENNEURON_DIST_CHECKS=0 skips the fingerprint exchange that collectives other than
// all-reduce, all-gather and reduce-scatter into one tensor run first (those carry their data
// in it, so they always check).
bool agreement_checked() {
  static const bool checked = [] {
    const char* value = std::getenv("OPENNEURON_DIST_CHECKS");
    return value == nullptr || std::string(value) != "0";
  }();
  return checked;
}

enum class Access { kRead, kWrite, kReadWrite };

// Which element count of a collective every rank must share: the tensors it reads (most
// collectives), the ones it writes (scatter: only the root reads), or none (all-to-all with
// uneven splits); the kind of collective and the dtype must always agree.
enum class Agree { kReadSizes, kWriteSizes, kKindOnly };

// The host tensors a collective hands to the transport, one per device tensor it reads or
// writes: the same memory, or a pinned staging buffer copied in before and out after.
class HostBuffers {
 public:
  explicit HostBuffers(const char* op_name) : op_name_(op_name) {}

  at::Tensor add(const at::Tensor& tensor, Access access) {
    TORCH_CHECK(tensor.defined(), "neuron backend: ", op_name_, " got an undefined tensor");
    if (!is_neuron(tensor)) {
      TORCH_CHECK(tensor.device().is_cpu(), "neuron backend: ", op_name_,
                  " takes neuron or cpu tensors, got one on ", tensor.device());
      entries_.push_back({tensor, tensor, access, false});
      return tensor;
    }
    TORCH_CHECK(tensor.is_contiguous(), "neuron backend: ", op_name_,
                " needs contiguous tensors; got one of shape ", tensor.sizes(), " and strides ",
                tensor.strides(), " (call .contiguous() first)");
    TORCH_CHECK(!tensor.is_sparse(), "neuron backend: ", op_name_, " takes dense tensors");
    if (device_ < 0) {
      device_ = tensor.device().index();
    } else {
      TORCH_CHECK(tensor.device().index() == device_, "neuron backend: ", op_name_,
                  " got tensors on neuron:", device_, " and ", tensor.device(),
                  "; one call takes tensors of one device");
    }
    at::Tensor host;
    const bool staged = staging_forced();
    if (staged) {
      host = at::empty(tensor.sizes(), tensor.options().device(at::kCPU).pinned_memory(true));
    } else {
      // The alias keeps the device tensor's storage alive for as long as the transport holds it.
      host = at::from_blob(
          tensor.data_ptr(), tensor.sizes(), tensor.strides(), [keep = tensor](void*) {},
          tensor.options().device(at::kCPU));
    }
    entries_.push_back({tensor, host, access, staged});
    return host;
  }

  Tensors add_all(const Tensors& tensors, Access access) {
    Tensors hosts;
    hosts.reserve(tensors.size());
    for (const auto& tensor : tensors) hosts.push_back(add(tensor, access));
    return hosts;
  }

  std::vector<Tensors> add_nested(const std::vector<Tensors>& lists, Access access) {
    std::vector<Tensors> hosts;
    for (const auto& list : lists) hosts.push_back(add_all(list, access));
    return hosts;
  }

  // The device of the neuron tensors, or -1 when every tensor is on the host.
  int device() const { return device_; }

  // The dtype of the first tensor and the element count that `agree` selects.
  std::pair<int64_t, int64_t> signature(Agree agree) const {
    int64_t dtype = -1, count = 0;
    for (const auto& entry : entries_) {
      if (dtype < 0) dtype = static_cast<int64_t>(entry.device.scalar_type());
      const bool reads = entry.access != Access::kWrite;
      if ((agree == Agree::kReadSizes && reads) || (agree == Agree::kWriteSizes && !reads)) {
        count += entry.device.numel();
      }
    }
    return {dtype, agree == Agree::kKindOnly ? -1 : count};
  }

  // Run on the communication stream: its inputs are ready there.
  void copy_in() const {
    for (const auto& entry : entries_) {
      if (entry.staged && entry.access != Access::kWrite) {
        std::memcpy(entry.host.data_ptr(), entry.device.data_ptr(), entry.device.nbytes());
      }
    }
  }

  void copy_out() const {
    for (const auto& entry : entries_) {
      if (entry.staged && entry.access != Access::kRead) {
        std::memcpy(entry.device.data_ptr(), entry.host.data_ptr(), entry.device.nbytes());
      }
    }
  }

  // Declares every device buffer used by work queued on `stream` so far, so the caching
  // allocator does not hand it to other work before the collective is over.
  void record_on(runtime::Stream& stream) const {
    for (const auto& entry : entries_) {
      if (!is_neuron(entry.device)) continue;
      auto& allocator = runtime::Runtime::get().device(device_).allocator();
      allocator.record_stream(entry.device.storage().data_ptr().get(), stream);
    }
  }

 private:
  struct Entry {
    at::Tensor device;
    at::Tensor host;
    Access access;
    bool staged;
  };
  const char* op_name_;
  int device_ = -1;
  std::vector<Entry> entries_;
};

// One submitted collective: completes when the communication stream has run it. For neuron
// tensors, wait() makes the current stream wait (the host returns at once); for host tensors and
// barriers it blocks the host, as Gloo's Work does.
class NeuronWork : public c10d::Work {
 public:
  NeuronWork(int rank, c10d::OpType type, const char* op_name,
             std::shared_ptr<Completion> completion, Tensors outputs, int device, bool host_wait)
      : c10d::Work(rank, type),
        op_name_(op_name),
        completion_(std::move(completion)),
        outputs_(std::move(outputs)),
        device_(device),
        host_wait_(host_wait || device < 0),
        future_(c10::make_intrusive<c10::ivalue::Future>(
            c10::ListType::create(c10::TensorType::get()))) {
    auto future = future_;
    auto values = outputs_;
    completion_->on_done([future, values, op_name](const std::string& error) {
      if (error.empty()) {
        future->markCompleted(c10::IValue(values));
      } else {
        future->setError(dist_error(error_text(op_name, error)));
      }
    });
  }

  bool isCompleted() override { return completion_->is_done(); }
  bool isSuccess() const override { return completion_->is_done() && !completion_->failed(); }
  std::exception_ptr exception() const override {
    if (!completion_->failed()) return nullptr;
    return dist_error(error_text(op_name_, completion_->error()));
  }
  // The sender is known only once the message has arrived: blocks the host until then.
  int sourceRank() const override {
    if (!source_rank_) return -1;
    wait_without_gil(*completion_, std::chrono::milliseconds(0));
    raise_if_failed();
    return *source_rank_;
  }
  Tensors result() override { return outputs_; }

  void synchronize() override { block_current_stream(); }
  void blockCurrentStream() override { block_current_stream(); }

  bool wait(std::chrono::milliseconds timeout) override {
    if (host_wait_ || timeout != kNoTimeout) {
      const bool finished = wait_without_gil(
          *completion_, timeout == kNoTimeout ? std::chrono::milliseconds(0) : timeout);
      if (!finished) {
        TORCH_CHECK_WITH(DistBackendError, false, "neuron backend: ", op_name_,
                         " did not finish within ", timeout.count(), " ms");
      }
    }
    raise_if_failed();
    if (!host_wait_) block_current_stream();
    return true;
  }

  c10::intrusive_ptr<c10::ivalue::Future> getFuture() override { return future_; }

  void set_source_rank(std::shared_ptr<int> rank) { source_rank_ = std::move(rank); }

  static std::string error_text(const char* op_name, const std::string& error) {
    return std::string("neuron backend: ") + op_name + " failed: " + error;
  }

 private:
  void raise_if_failed() const {
    if (completion_->failed()) {
      TORCH_CHECK_WITH(DistBackendError, false, error_text(op_name_, completion_->error()));
    }
  }

  void block_current_stream() {
    if (device_ < 0) return;
    completion_->block(runtime::current_stream(device_), op_name_);
  }

  const char* op_name_;
  std::shared_ptr<Completion> completion_;
  Tensors outputs_;
  int device_;
  bool host_wait_;
  c10::intrusive_ptr<c10::ivalue::Future> future_;
  std::shared_ptr<int> source_rank_;
};

// How a reduction the transport lacks is done: the transport sums, then this scales.
struct ReductionPlan {
  c10d::ReduceOp transport_op;
  bool average = false;
  double premul_factor = 1.0;
  at::Tensor premul_tensor;  // host alias of a tensor factor, if any
};

bool is_floating(const at::Tensor& tensor) { return at::isFloatingType(tensor.scalar_type()); }

void scale_before(const ReductionPlan& plan, const Tensors& tensors) {
  if (plan.premul_tensor.defined()) {
    for (auto tensor : tensors) tensor.mul_(plan.premul_tensor);
  } else if (plan.premul_factor != 1.0) {
    for (auto tensor : tensors) tensor.mul_(plan.premul_factor);
  }
}

void average_after(const ReductionPlan& plan, const Tensors& tensors, int size) {
  if (!plan.average) return;
  for (auto tensor : tensors) {
    if (is_floating(tensor)) {
      tensor.div_(size);
    } else {
      tensor.div_(size, "trunc");  // integer averages truncate, as NCCL's do
    }
  }
}

// The group options; a type of its own so that Python can deep-copy it (split_group does).
struct NeuronBackendOptions : c10d::Backend::Options {
  explicit NeuronBackendOptions(std::chrono::milliseconds timeout) : Options("neuron", timeout) {}
};

class NeuronBackend : public c10d::Backend {
 public:
  NeuronBackend(c10::intrusive_ptr<c10d::Store> store, int rank, int size,
                std::chrono::milliseconds timeout, c10::intrusive_ptr<c10d::Backend> transport,
                HostFactory factory)
      : c10d::Backend(rank, size),
        store_(std::move(store)),
        timeout_(timeout),
        transport_(std::move(transport)),
        exchange_(transport_, rank, size),
        factory_(std::move(factory)),
        queue_device_(runtime::current_device()) {
    TORCH_CHECK(transport_, "neuron backend: no transport backend was given");
  }

  const std::string getBackendName() const override { return "neuron"; }
  bool supportsSplitting() const override { return true; }
  bool supportsCoalescing() const override { return true; }
  void setTimeout(std::chrono::milliseconds timeout) override { timeout_ = timeout; }
  // Every rank of a new group starts counting its collectives at 0, so there is nothing to agree.
  void setSequenceNumberForGroup() override {}
  uint64_t getSequenceNumberForGroup() override { return sequence_number_; }

  c10::intrusive_ptr<Options> getBackendOptions() override {
    auto options = c10::make_intrusive<NeuronBackendOptions>(timeout_);
    options->group_name = getGroupUid();
    return options;
  }

  c10::intrusive_ptr<c10d::Backend> split(const c10::intrusive_ptr<c10d::Store>& store,
                                          const std::vector<int>& ranks,
                                          const c10::intrusive_ptr<Options>& options) override {
    auto found = std::find(ranks.begin(), ranks.end(), getRank());
    if (found == ranks.end()) return nullptr;
    const int group_rank = static_cast<int>(found - ranks.begin());
    const std::string prefix =
        (options && !options->group_name.empty()) ? options->group_name : std::string("split");
    auto split_store = c10::make_intrusive<c10d::PrefixStore>(prefix + "/neuron", store);
    const auto timeout = options ? options->timeout : timeout_;
    auto transport = factory_(split_store, group_rank, static_cast<int>(ranks.size()), timeout);
    auto backend = c10::make_intrusive<NeuronBackend>(
        split_store, group_rank, static_cast<int>(ranks.size()), timeout, transport, factory_);
    if (options) backend->setGroupUid(options->group_name);
    return backend;
  }

  void startCoalescing() override {
    TORCH_CHECK(!coalescing_, "neuron backend: coalescing already started");
    coalescing_ = true;
    coalesced_.clear();
    coalesced_outputs_.clear();
    coalesced_device_ = -1;
  }

  c10::intrusive_ptr<c10d::Work> endCoalescing() override {
    TORCH_CHECK(coalescing_, "neuron backend: endCoalescing without startCoalescing");
    coalescing_ = false;
    auto all = Completion::all_of(coalesced_);
    coalesced_.clear();
    return c10::make_intrusive<NeuronWork>(getRank(), c10d::OpType::COALESCED, "coalesced", all,
                                           std::move(coalesced_outputs_), coalesced_device_, false);
  }

  // ---- collectives ----

  c10::intrusive_ptr<c10d::Work> allreduce(Tensors& tensors,
                                           const c10d::AllreduceOptions& opts) override {
    auto buffers = std::make_shared<HostBuffers>("all_reduce");
    auto hosts = buffers->add_all(tensors, Access::kReadWrite);
    auto plan = plan_reduction(opts.reduceOp, *buffers);
    c10d::AllreduceOptions transport_opts = opts;
    transport_opts.reduceOp = plan.transport_op;
    const int64_t reduce_op = opts.reduceOp.op_;
    if (hosts.size() == 1 && combinable(plan.transport_op.op_)) {
      return launch(
          "all_reduce", c10d::OpType::ALLREDUCE, buffers, tensors,
          [this, hosts, plan](const Fingerprint& fingerprint) mutable {
            scale_before(plan, hosts);
            exchange_all_reduce(hosts[0], plan.transport_op.op_, fingerprint);
            average_after(plan, hosts, getSize());
          },
          How{opts.asyncOp, Agree::kReadSizes, reduce_op, true});
    }
    return launch(
        "all_reduce", c10d::OpType::ALLREDUCE, buffers, tensors,
        [this, hosts, plan, transport_opts](const Fingerprint&) mutable {
          scale_before(plan, hosts);
          transport_->allreduce(hosts, transport_opts)->wait();
          average_after(plan, hosts, getSize());
        },
        How{opts.asyncOp, Agree::kReadSizes, reduce_op});
  }

  c10::intrusive_ptr<c10d::Work> allreduce_coalesced(
      Tensors& tensors, const c10d::AllreduceCoalescedOptions& opts) override {
    auto buffers = std::make_shared<HostBuffers>("all_reduce_coalesced");
    auto hosts = buffers->add_all(tensors, Access::kReadWrite);
    auto plan = plan_reduction(opts.reduceOp, *buffers);
    c10d::AllreduceCoalescedOptions transport_opts = opts;
    transport_opts.reduceOp = plan.transport_op;
    return launch(
        "all_reduce_coalesced", c10d::OpType::ALLREDUCE_COALESCED, buffers, tensors,
        [this, hosts, plan, transport_opts](const Fingerprint&) mutable {
          scale_before(plan, hosts);
          transport_->allreduce_coalesced(hosts, transport_opts)->wait();
          average_after(plan, hosts, getSize());
        },
        How{opts.asyncOp});
  }

  c10::intrusive_ptr<c10d::Work> broadcast(Tensors& tensors,
                                           const c10d::BroadcastOptions& opts) override {
    auto buffers = std::make_shared<HostBuffers>("broadcast");
    auto hosts = buffers->add_all(tensors, Access::kReadWrite);
    return launch(
        "broadcast", c10d::OpType::BROADCAST, buffers, tensors,
        [this, hosts, opts](const Fingerprint&) mutable {
          transport_->broadcast(hosts, opts)->wait();
        },
        How{opts.asyncOp});
  }

  c10::intrusive_ptr<c10d::Work> reduce(Tensors& tensors,
                                        const c10d::ReduceOptions& opts) override {
    auto buffers = std::make_shared<HostBuffers>("reduce");
    auto hosts = buffers->add_all(tensors, Access::kReadWrite);
    auto plan = plan_reduction(opts.reduceOp, *buffers);
    c10d::ReduceOptions transport_opts = opts;
    transport_opts.reduceOp = plan.transport_op;
    const bool is_root = opts.rootRank == getRank();
    return launch(
        "reduce", c10d::OpType::REDUCE, buffers, tensors,
        [this, hosts, plan, transport_opts, is_root](const Fingerprint&) mutable {
          scale_before(plan, hosts);
          transport_->reduce(hosts, transport_opts)->wait();
          if (is_root) average_after(plan, hosts, getSize());
        },
        How{opts.asyncOp});
  }

  c10::intrusive_ptr<c10d::Work> allgather(std::vector<Tensors>& outputs, Tensors& inputs,
                                           const c10d::AllgatherOptions& opts) override {
    auto buffers = std::make_shared<HostBuffers>("all_gather");
    auto host_outputs = buffers->add_nested(outputs, Access::kWrite);
    auto host_inputs = buffers->add_all(inputs, Access::kRead);
    return launch(
        "all_gather", c10d::OpType::ALLGATHER, buffers, flatten(outputs),
        [this, host_outputs, host_inputs, opts](const Fingerprint&) mutable {
          transport_->allgather(host_outputs, host_inputs, opts)->wait();
        },
        How{opts.asyncOp});
  }

  c10::intrusive_ptr<c10d::Work> _allgather_base(at::Tensor& output, at::Tensor& input,
                                                 const c10d::AllgatherOptions& opts) override {
    auto buffers = std::make_shared<HostBuffers>("all_gather_into_tensor");
    auto host_output = buffers->add(output, Access::kWrite);
    auto host_input = buffers->add(input, Access::kRead);
    check_gather_sizes("all_gather_into_tensor", output, input);
    {
      return launch(
          "all_gather_into_tensor", c10d::OpType::_ALLGATHER_BASE, buffers, {output},
          [this, host_output, host_input](const Fingerprint& fingerprint) {
            exchange_all_gather(host_output, host_input, fingerprint);
          },
          How{opts.asyncOp, Agree::kReadSizes, -1, true});
    }
    return launch(
        "all_gather_into_tensor", c10d::OpType::_ALLGATHER_BASE, buffers, {output},
        [this, host_output, host_input, opts](const Fingerprint&) mutable {
          transport_->_allgather_base(host_output, host_input, opts)->wait();
        },
        How{opts.asyncOp});
  }

  c10::intrusive_ptr<c10d::Work> allgather_coalesced(std::vector<Tensors>& outputs, Tensors& inputs,
                                                     const c10d::AllgatherOptions& opts) override {
    auto buffers = std::make_shared<HostBuffers>("all_gather_coalesced");
    auto host_outputs = buffers->add_nested(outputs, Access::kWrite);
    auto host_inputs = buffers->add_all(inputs, Access::kRead);
    return launch(
        "all_gather_coalesced", c10d::OpType::ALLGATHER_COALESCED, buffers, flatten(outputs),
        [this, host_outputs, host_inputs, opts](const Fingerprint&) mutable {
          transport_->allgather_coalesced(host_outputs, host_inputs, opts)->wait();
        },
        How{opts.asyncOp});
  }

  c10::intrusive_ptr<c10d::Work> allgather_into_tensor_coalesced(
      Tensors& outputs, Tensors& inputs, const c10d::AllgatherOptions& opts) override {
    auto buffers = std::make_shared<HostBuffers>("all_gather_into_tensor_coalesced");
    auto host_outputs = buffers->add_all(outputs, Access::kWrite);
    auto host_inputs = buffers->add_all(inputs, Access::kRead);
    for (size_t i = 0; i < outputs.size() && i < inputs.size(); ++i) {
      check_gather_sizes("all_gather_into_tensor_coalesced", outputs[i], inputs[i]);
    }
    return launch(
        "all_gather_into_tensor_coalesced", c10d::OpType::COALESCED, buffers, outputs,
        [this, host_outputs, host_inputs, opts](const Fingerprint&) mutable {
          for (size_t i = 0; i < host_outputs.size(); ++i) {
            transport_->_allgather_base(host_outputs[i], host_inputs[i], opts)->wait();
          }
        },
        How{opts.asyncOp});
  }

  c10::intrusive_ptr<c10d::Work> gather(std::vector<Tensors>& outputs, Tensors& inputs,
                                        const c10d::GatherOptions& opts) override {
    auto buffers = std::make_shared<HostBuffers>("gather");
    auto host_outputs = buffers->add_nested(outputs, Access::kWrite);
    auto host_inputs = buffers->add_all(inputs, Access::kRead);
    return launch(
        "gather", c10d::OpType::GATHER, buffers, flatten(outputs),
        [this, host_outputs, host_inputs, opts](const Fingerprint&) mutable {
          transport_->gather(host_outputs, host_inputs, opts)->wait();
        },
        How{opts.asyncOp});
  }

  c10::intrusive_ptr<c10d::Work> scatter(Tensors& outputs, std::vector<Tensors>& inputs,
                                         const c10d::ScatterOptions& opts) override {
    auto buffers = std::make_shared<HostBuffers>("scatter");
    auto host_outputs = buffers->add_all(outputs, Access::kWrite);
    auto host_inputs = buffers->add_nested(inputs, Access::kRead);
    return launch(
        "scatter", c10d::OpType::SCATTER, buffers, outputs,
        [this, host_outputs, host_inputs, opts](const Fingerprint&) mutable {
          transport_->scatter(host_outputs, host_inputs, opts)->wait();
        },
        How{opts.asyncOp, Agree::kWriteSizes});
  }

  // Reduce-scatter runs on the transport's own reduce-scatter; a premultiplied sum scales a
  // copy of the inputs first (they are read-only), an average divides the output after.
  c10::intrusive_ptr<c10d::Work> reduce_scatter(Tensors& outputs, std::vector<Tensors>& inputs,
                                                const c10d::ReduceScatterOptions& opts) override {
    TORCH_CHECK(outputs.size() == 1 && inputs.size() == 1,
                "neuron backend: reduce_scatter takes one output tensor and one input list");
    TORCH_CHECK(static_cast<int>(inputs[0].size()) == getSize(),
                "neuron backend: reduce_scatter "
                "needs one input per rank (",
                getSize(), "), got ", inputs[0].size());
    for (const auto& input : inputs[0]) {
      TORCH_CHECK(input.sizes() == outputs[0].sizes() && input.dtype() == outputs[0].dtype(),
                  "neuron backend: reduce_scatter inputs must match the output's shape ",
                  outputs[0].sizes(), " and dtype ", outputs[0].dtype(), "; got ", input.sizes(),
                  " ", input.dtype());
    }
    auto buffers = std::make_shared<HostBuffers>("reduce_scatter");
    auto host_output = buffers->add(outputs[0], Access::kWrite);
    auto host_inputs = buffers->add_all(inputs[0], Access::kRead);
    auto plan = plan_reduction(opts.reduceOp, *buffers);
    return launch(
        "reduce_scatter", c10d::OpType::REDUCE_SCATTER, buffers, outputs,
        [this, host_output, host_inputs, plan, opts](const Fingerprint&) mutable {
          Tensors outs{host_output};
          std::vector<Tensors> ins{scaled_copy(plan, host_inputs)};
          auto transport_opts = opts;
          transport_opts.reduceOp = plan.transport_op;
          transport_->reduce_scatter(outs, ins, transport_opts)->wait();
          average_after(plan, outs, getSize());
        },
        How{opts.asyncOp});
  }

  c10::intrusive_ptr<c10d::Work> _reduce_scatter_base(
      at::Tensor& output, at::Tensor& input, const c10d::ReduceScatterOptions& opts) override {
    TORCH_CHECK(input.numel() == output.numel() * getSize() && input.dtype() == output.dtype(),
                "neuron backend: reduce_scatter_tensor needs an input of world size (", getSize(),
                ") times the output's ", output.numel(), " elements and the same dtype; got ",
                input.numel(), " elements of ", input.dtype(), " for ", output.dtype());
    auto buffers = std::make_shared<HostBuffers>("reduce_scatter_tensor");
    auto host_output = buffers->add(output, Access::kWrite);
    auto host_input = buffers->add(input, Access::kRead);
    auto plan = plan_reduction(opts.reduceOp, *buffers);
    const int64_t reduce_op = opts.reduceOp.op_;
    if (combinable(plan.transport_op.op_)) {
      return launch(
          "reduce_scatter_tensor", c10d::OpType::_REDUCE_SCATTER_BASE, buffers, {output},
          [this, host_output, host_input, plan](const Fingerprint& fingerprint) {
            auto source = scaled_copy(plan, {host_input})[0];
            exchange_reduce_scatter(source, host_output, plan.transport_op.op_, fingerprint);
            average_after(plan, {host_output}, getSize());
          },
          How{opts.asyncOp, Agree::kReadSizes, reduce_op, true});
    }
    return launch(
        "reduce_scatter_tensor", c10d::OpType::_REDUCE_SCATTER_BASE, buffers, {output},
        [this, host_output, host_input, plan, opts](const Fingerprint&) mutable {
          reduce_scatter_on_host(host_input, host_output, plan, opts);
        },
        How{opts.asyncOp, Agree::kReadSizes, reduce_op});
  }

  c10::intrusive_ptr<c10d::Work> reduce_scatter_tensor_coalesced(
      Tensors& outputs, Tensors& inputs, const c10d::ReduceScatterOptions& opts) override {
    TORCH_CHECK(outputs.size() == inputs.size(),
                "neuron backend: reduce_scatter_tensor_coalesced needs as many outputs as inputs");
    auto buffers = std::make_shared<HostBuffers>("reduce_scatter_tensor_coalesced");
    auto host_outputs = buffers->add_all(outputs, Access::kWrite);
    auto host_inputs = buffers->add_all(inputs, Access::kRead);
    auto plan = plan_reduction(opts.reduceOp, *buffers);
    return launch(
        "reduce_scatter_tensor_coalesced", c10d::OpType::COALESCED, buffers, outputs,
        [this, host_outputs, host_inputs, plan, opts](const Fingerprint&) mutable {
          for (size_t i = 0; i < host_outputs.size(); ++i) {
            reduce_scatter_on_host(host_inputs[i], host_outputs[i], plan, opts);
          }
        },
        How{opts.asyncOp});
  }

  c10::intrusive_ptr<c10d::Work> alltoall_base(at::Tensor& output, at::Tensor& input,
                                               std::vector<int64_t>& output_splits,
                                               std::vector<int64_t>& input_splits,
                                               const c10d::AllToAllOptions& opts) override {
    check_splits("all_to_all_single", "input", input, input_splits);
    check_splits("all_to_all_single", "output", output, output_splits);
    auto buffers = std::make_shared<HostBuffers>("all_to_all_single");
    auto host_output = buffers->add(output, Access::kWrite);
    auto host_input = buffers->add(input, Access::kRead);
    return launch(
        "all_to_all_single", c10d::OpType::ALLTOALL_BASE, buffers, {output},
        [this, host_output, host_input, output_splits, input_splits,
         opts](const Fingerprint&) mutable {
          transport_->alltoall_base(host_output, host_input, output_splits, input_splits, opts)
              ->wait();
        },
        How{opts.asyncOp, Agree::kKindOnly});
  }

  // A list all-to-all packs the lists into one buffer each way and runs the single-tensor form.
  c10::intrusive_ptr<c10d::Work> alltoall(Tensors& outputs, Tensors& inputs,
                                          const c10d::AllToAllOptions& opts) override {
    TORCH_CHECK(static_cast<int>(outputs.size()) == getSize() &&
                    static_cast<int>(inputs.size()) == getSize(),
                "neuron backend: all_to_all needs one input and one output per rank (", getSize(),
                "); got ", inputs.size(), " inputs and ", outputs.size(), " outputs");
    for (size_t i = 1; i < inputs.size(); ++i) {
      TORCH_CHECK(inputs[i].dtype() == inputs[0].dtype() && outputs[i].dtype() == inputs[0].dtype(),
                  "neuron backend: all_to_all needs one dtype for every tensor");
    }
    auto buffers = std::make_shared<HostBuffers>("all_to_all");
    auto host_outputs = buffers->add_all(outputs, Access::kWrite);
    auto host_inputs = buffers->add_all(inputs, Access::kRead);
    return launch(
        "all_to_all", c10d::OpType::ALLTOALL, buffers, outputs,
        [this, host_outputs, host_inputs, opts](const Fingerprint&) mutable {
          std::vector<int64_t> input_splits, output_splits;
          for (const auto& t : host_inputs) input_splits.push_back(t.numel());
          for (const auto& t : host_outputs) output_splits.push_back(t.numel());
          auto packed_input = at::cat(flat_views(host_inputs));
          auto packed_output =
              at::empty({std::accumulate(output_splits.begin(), output_splits.end(), int64_t{0})},
                        packed_input.options());
          // The transport may move the split vectors away: give it copies.
          auto sent_splits = input_splits;
          auto received_splits = output_splits;
          transport_->alltoall_base(packed_output, packed_input, received_splits, sent_splits, opts)
              ->wait();
          int64_t offset = 0;
          for (size_t i = 0; i < host_outputs.size(); ++i) {
            host_outputs[i].view(-1).copy_(packed_output.narrow(0, offset, output_splits[i]));
            offset += output_splits[i];
          }
        },
        How{opts.asyncOp, Agree::kKindOnly});
  }

  c10::intrusive_ptr<c10d::Work> barrier(const c10d::BarrierOptions& opts) override {
    auto completion = CollectiveQueue::for_device(queue_device_)
                          .submit("barrier", nullptr, [this, self = keep_alive(), opts] {
                            transport_->barrier(opts)->wait();
                          });
    return finish_launch("barrier", c10d::OpType::BARRIER, completion, {}, -1, true);
  }

  // ---- point to point ----

  // Every message is preceded by a header (dtype, element count, bytes) on a tag of its own; the
  // receiver compares it with its tensor before it posts the data receive, so a size the
  // receiver does not expect raises there, naming both sides, instead of aborting in the
  // transport (a larger message) or leaving the tail stale (a smaller one).
  c10::intrusive_ptr<c10d::Work> send(Tensors& tensors, int dst, int tag) override {
    check_peer("send", dst);
    check_tag("send", tag);
    TORCH_CHECK(tensors.size() == 1, "neuron backend: send takes one tensor, got ", tensors.size());
    auto buffers = std::make_shared<HostBuffers>("send");
    auto hosts = buffers->add_all(tensors, Access::kRead);
    return launch_transfer(
        "send", c10d::OpType::SEND, buffers, tensors, nullptr, false,
        [this, hosts, dst, tag]() mutable {
          Tensors header{p2p_header(hosts[0])};
          auto header_sent = transport_->send(header, dst, header_tag(tag));
          auto data_sent = transport_->send(hosts, dst, tag);
          return std::function<void(int*)>([this, header, header_sent, data_sent](int*) {
            header_sent->wait(timeout_);
            data_sent->wait(timeout_);
          });
        });
  }

  c10::intrusive_ptr<c10d::Work> recv(Tensors& tensors, int src, int tag) override {
    check_peer("recv", src);
    return receive("recv", c10d::OpType::RECV, tensors, src, tag, nullptr);
  }

  c10::intrusive_ptr<c10d::Work> recvAnysource(Tensors& tensors, int tag) override {
    return receive("recv_anysource", c10d::OpType::RECVANYSOURCE, tensors, -1, tag,
                   std::make_shared<int>(-1));
  }

 private:
  // Point-to-point headers travel on the user's tag with this bit set.
  static constexpr int kHeaderTagBit = 1 << 30;
  static constexpr int kHeaderFields = 3;  // dtype, elements, bytes
  static int header_tag(int tag) { return tag | kHeaderTagBit; }

  static void check_tag(const char* op_name, int tag) {
    TORCH_CHECK(tag >= 0 && tag < kHeaderTagBit - (1 << 16), "neuron backend: ", op_name,
                " takes tags from 0 to ", kHeaderTagBit - (1 << 16) - 1, ", got ", tag);
  }

  static at::Tensor p2p_header(const at::Tensor& tensor) {
    auto header = at::empty({kHeaderFields}, at::kLong);
    auto* fields = header.data_ptr<int64_t>();
    fields[0] = static_cast<int64_t>(tensor.scalar_type());
    fields[1] = tensor.numel();
    fields[2] = static_cast<int64_t>(tensor.nbytes());
    return header;
  }

  // A receive from `src` (-1: any source): the header first, then the data if it matches.
  c10::intrusive_ptr<c10d::Work> receive(const char* op_name, c10d::OpType type, Tensors& tensors,
                                         int src, int tag, std::shared_ptr<int> source) {
    check_tag(op_name, tag);
    TORCH_CHECK(tensors.size() == 1, "neuron backend: ", op_name, " takes one tensor, got ",
                tensors.size());
    auto buffers = std::make_shared<HostBuffers>(op_name);
    auto hosts = buffers->add_all(tensors, Access::kWrite);
    return launch_transfer(
        op_name, type, buffers, tensors, source, true, [this, hosts, src, tag]() mutable {
          Tensors header{at::empty({kHeaderFields}, at::kLong)};
          auto header_received = src >= 0 ? transport_->recv(header, src, header_tag(tag))
                                          : transport_->recvAnysource(header, header_tag(tag));
          return std::function<void(int*)>([this, hosts, header, header_received, src,
                                            tag](int* sender) mutable {
            header_received->wait(timeout_);
            const int from = src >= 0 ? src : header_received->sourceRank();
            const int64_t* fields = header[0].data_ptr<int64_t>();
            const at::Tensor& mine = hosts[0];
            if (fields[0] != static_cast<int64_t>(mine.scalar_type()) ||
                fields[1] != mine.numel()) {
              // Take the message in anyway, so the next one on this tag is not taken for it.
              Tensors drain{at::empty({fields[2]}, at::kByte)};
              transport_->recv(drain, from, tag)->wait(timeout_);
              throw std::runtime_error(
                  "rank " + std::to_string(from) + " sent " + std::to_string(fields[1]) +
                  " elements of " + c10::toString(static_cast<c10::ScalarType>(fields[0])) +
                  " (tag " + std::to_string(tag) + ") but this rank (" + std::to_string(getRank()) +
                  ") receives into " + std::to_string(mine.numel()) + " elements of " +
                  c10::toString(mine.scalar_type()));
            }
            transport_->recv(hosts, from, tag)->wait(timeout_);
            if (sender != nullptr) *sender = from;
          });
        });
  }

  static Tensors flatten(const std::vector<Tensors>& lists) {
    Tensors all;
    for (const auto& list : lists) all.insert(all.end(), list.begin(), list.end());
    return all;
  }

  static Tensors flat_views(const Tensors& tensors) {
    Tensors views;
    for (const auto& tensor : tensors) views.push_back(tensor.reshape({-1}));
    return views;
  }

  void check_peer(const char* op_name, int peer) const {
    TORCH_CHECK(peer >= 0 && peer < getSize() && peer != getRank(), "neuron backend: ", op_name,
                " peer rank ", peer, " is not another rank of this group of ", getSize());
  }

  void check_gather_sizes(const char* op_name, const at::Tensor& output,
                          const at::Tensor& input) const {
    TORCH_CHECK(output.numel() == input.numel() * getSize() && output.dtype() == input.dtype(),
                "neuron backend: ", op_name, " needs an output of world size (", getSize(),
                ") times the input's ", input.numel(), " elements and the same dtype; got ",
                output.numel(), " elements of ", output.dtype(), " for ", input.dtype());
  }

  void check_splits(const char* op_name, const char* which, const at::Tensor& tensor,
                    const std::vector<int64_t>& splits) const {
    if (splits.empty()) {
      TORCH_CHECK(tensor.dim() > 0 && tensor.size(0) % getSize() == 0, "neuron backend: ", op_name,
                  " without split sizes needs the ", which,
                  "'s first dimension divisible by the world size ", getSize(), "; got shape ",
                  tensor.sizes());
      return;
    }
    TORCH_CHECK(static_cast<int>(splits.size()) == getSize(), "neuron backend: ", op_name,
                " needs one ", which, " split size per rank (", getSize(), "), got ",
                splits.size());
    int64_t total = 0;
    for (auto split : splits) {
      TORCH_CHECK(split >= 0, "neuron backend: ", op_name, " got a negative split size");
      total += split;
    }
    TORCH_CHECK(tensor.dim() > 0 && total == tensor.size(0), "neuron backend: ", op_name, " ",
                which, " split sizes add up to ", total, " but the ", which,
                "'s first dimension is ", tensor.dim() > 0 ? tensor.size(0) : 0);
  }

  ReductionPlan plan_reduction(const c10d::ReduceOp& op, HostBuffers& buffers) const {
    ReductionPlan plan{op};
    if (op.op_ == c10d::ReduceOp::AVG) {
      plan.transport_op = c10d::ReduceOp(c10d::ReduceOp::SUM);
      plan.average = true;
    } else if (op.op_ == c10d::ReduceOp::PREMUL_SUM) {
      plan.transport_op = c10d::ReduceOp(c10d::ReduceOp::SUM);
      auto* supplement = dynamic_cast<c10d::NCCLPreMulSumSupplement*>(op.supplement_.get());
      TORCH_CHECK(supplement != nullptr, "neuron backend: PREMUL_SUM without a factor");
      if (supplement->tensor_factor.defined()) {
        plan.premul_tensor = buffers.add(supplement->tensor_factor, Access::kRead);
      } else {
        plan.premul_factor = supplement->double_factor;
      }
    }
    return plan;
  }

  // The inputs as the transport should reduce them: copies scaled by a premultiplied sum's
  // factor, or the inputs themselves.
  static Tensors scaled_copy(const ReductionPlan& plan, const Tensors& inputs) {
    if (!plan.premul_tensor.defined() && plan.premul_factor == 1.0) return inputs;
    Tensors copies;
    for (const auto& input : inputs) copies.push_back(input.clone());
    scale_before(plan, copies);
    return copies;
  }

  static bool combinable(c10d::ReduceOp::RedOpType op) {
    switch (op) {
      case c10d::ReduceOp::SUM:
      case c10d::ReduceOp::PRODUCT:
      case c10d::ReduceOp::MIN:
      case c10d::ReduceOp::MAX:
      case c10d::ReduceOp::BAND:
      case c10d::ReduceOp::BOR:
      case c10d::ReduceOp::BXOR:
        return true;
      default:
        return false;
    }
  }

  // out = a (op) b, elementwise; `out` may be `a` or `b`. In slices below ATen's parallel grain,
  // so the fold runs on this thread alone: an OpenMP team would keep spinning on the cores the
  // transport's event threads need to deliver the next messages (measured: a 256 KiB
  // all-reduce took 4.5 times as long).
  static void combine(const at::Tensor& out, const at::Tensor& a, const at::Tensor& b,
                      c10d::ReduceOp::RedOpType op) {
    const int64_t total = out.numel();
    const int64_t slice = at::internal::GRAIN_SIZE - 1;
    if (total > slice) {
      auto flat_out = out.view(-1), flat_a = a.view(-1), flat_b = b.view(-1);
      for (int64_t begin = 0; begin < total; begin += slice) {
        const int64_t length = std::min(slice, total - begin);
        combine_slice(flat_out.narrow(0, begin, length), flat_a.narrow(0, begin, length),
                      flat_b.narrow(0, begin, length), op);
      }
      return;
    }
    combine_slice(out, a, b, op);
  }

  static void combine_slice(at::Tensor out, const at::Tensor& a, const at::Tensor& b,
                            c10d::ReduceOp::RedOpType op) {
    switch (op) {
      case c10d::ReduceOp::SUM:
        at::add_out(out, a, b);
        break;
      case c10d::ReduceOp::PRODUCT:
        at::mul_out(out, a, b);
        break;
      case c10d::ReduceOp::MIN:
        at::minimum_out(out, a, b);
        break;
      case c10d::ReduceOp::MAX:
        at::maximum_out(out, a, b);
        break;
      case c10d::ReduceOp::BAND:
        at::bitwise_and_out(out, a, b);
        break;
      case c10d::ReduceOp::BOR:
        at::bitwise_or_out(out, a, b);
        break;
      default:
        at::bitwise_xor_out(out, a, b);
        break;
    }
  }

  // Folds `parts` (one per rank, this rank's being `mine`) into `out` in rank order, so every
  // rank computes the same value bit for bit.
  static void fold_in_rank_order(at::Tensor out, const std::vector<at::Tensor>& parts, int mine,
                                 const at::Tensor& own, c10d::ReduceOp::RedOpType op) {
    const int size = static_cast<int>(parts.size());
    at::Tensor acc = mine == 0 ? own : parts[0];
    for (int r = 1; r < size; ++r) {
      at::Tensor target = r == size - 1 ? out : (acc.is_same(own) ? out : acc);
      combine(target, acc, r == mine ? own : parts[r], op);
      acc = target;
    }
    if (size == 1 && !out.is_same(own)) out.copy_(own);
  }

  // Up to these sizes a collective's data travels in the fingerprint exchange (one round of
  // messages in all); above, the exchange carries the fingerprint alone and the data follows.
  // All-reduce: whole up to kWholeReduceBytes (each rank folds every rank's data), then as a
  // reduce-scatter carried in the exchange and an all-gather of the reduced chunks up to
  // kChunkReduceBytes per chunk; all-gather and reduce-scatter up to kGatherCarryBytes per peer.
  // Defaults measured on 2 ranks (docs/performance.md); OPENNEURON_DIST_CARRY overrides them
  // ("whole,chunk,gather" in bytes) for measurement. Chunks are carried up to the exchange's
  // own limit: its slots have that size anyway, and past 4 MiB the transport's all-reduce after
  // the check measured 0.94-0.995x Gloo at 8-32 MiB against 1.03-1.08x carried.
  struct CarryLimits {
    int64_t whole_reduce = 256 << 10;
    int64_t chunk_reduce = FingerprintExchange::kCarriedBytes;
    int64_t gather = 2 << 20;
  };
  static const CarryLimits& carry_limits() {
    static const CarryLimits limits = [] {
      CarryLimits parsed;
      if (const char* value = std::getenv("OPENNEURON_DIST_CARRY")) {
        long long whole = 0, chunk = 0, gather = 0;
        if (std::sscanf(value, "%lld,%lld,%lld", &whole, &chunk, &gather) == 3) {
          parsed = {whole, chunk, gather};
        }
      }
      const int64_t most = FingerprintExchange::kCarriedBytes;
      parsed.whole_reduce = std::min(parsed.whole_reduce, most);
      parsed.chunk_reduce = std::min(parsed.chunk_reduce, most);
      parsed.gather = std::min(parsed.gather, most);
      return parsed;
    }();
    return limits;
  }

  // From this many bytes per peer, all-gather and reduce-scatter that are not carried move
  // their data as one point-to-point message per pair of ranks (Gloo's own all-gather and
  // reduce-scatter reach about a third of the bandwidth there).
  static constexpr int64_t kPairwiseBytes = 1 << 20;
  // The transport tag of those messages, above every point-to-point tag (check_tag).
  static constexpr int kPairwiseTag = 0x7ffffff0;

  // Sends `sends[p]` to and receives `receives[p]` from every peer p, sizes already agreed by
  // the fingerprints: every receive is posted before any send, so no data waits for one.
  void transfer_pairwise(const std::vector<std::pair<void*, int64_t>>& sends,
                         const std::vector<std::pair<void*, int64_t>>& receives) {
    std::vector<c10::intrusive_ptr<c10d::Work>> works;
    auto bytes_at = [](const std::pair<void*, int64_t>& range) {
      return at::from_blob(range.first, {range.second}, at::kByte);
    };
    for (int peer = 0; peer < getSize(); ++peer) {
      if (peer == getRank()) continue;
      Tensors into{bytes_at(receives[peer])};
      works.push_back(transport_->recv(into, peer, kPairwiseTag));
    }
    for (int peer = 0; peer < getSize(); ++peer) {
      if (peer == getRank()) continue;
      Tensors from{bytes_at(sends[peer])};
      works.push_back(transport_->send(from, peer, kPairwiseTag));
    }
    for (auto& work : works) work->wait(timeout_);
  }

  // A reusable host buffer of at least `bytes` bytes for what peer `slot` sends.
  void* scratch(int slot, int64_t bytes) {
    if (scratch_.size() < static_cast<size_t>(getSize())) scratch_.resize(getSize());
    auto& buffer = scratch_[slot];
    if (!buffer.defined() || buffer.numel() < bytes) buffer = at::empty({bytes}, at::kByte);
    return buffer.data_ptr();
  }

  // What every peer carried to this rank in the last exchange, viewed as `like` (this rank's
  // entry empty).
  std::vector<at::Tensor> carried_parts(const at::Tensor& like) const {
    std::vector<at::Tensor> parts(getSize());
    for (int rank = 0; rank < getSize(); ++rank) {
      if (rank == getRank()) continue;
      parts[rank] = at::from_blob(const_cast<uint8_t*>(exchange_.carried(rank)), like.sizes(),
                                  like.options());
    }
    return parts;
  }

  // Element range [begin, end) of chunk `index` when `total` elements split into `parts`.
  static std::pair<int64_t, int64_t> chunk_range(int64_t total, int parts, int index) {
    return {total * index / parts, total * (index + 1) / parts};
  }

  // A small all-reduce travels whole in the exchange and every rank folds all of it in rank
  // order. A mid-size one is a reduce-scatter carried in the exchange (each rank sends peer p
  // its chunk p and folds its own chunk in rank order) and an all-gather of the reduced chunks:
  // the same bytes as the transport's ring, with the check in its first message. Larger ones
  // run the transport's all-reduce after an exchange of the fingerprints.
  void exchange_all_reduce(at::Tensor host, c10d::ReduceOp::RedOpType op,
                           const Fingerprint& fingerprint) {
    const int size = getSize(), me = getRank();
    if (size == 1) return;
    const int64_t bytes = static_cast<int64_t>(host.nbytes());
    const auto& limits = carry_limits();
    if (bytes <= limits.whole_reduce) {
      exchange_.run_same(fingerprint, host.data_ptr(), bytes);
      fold_in_rank_order(host, carried_parts(host), me, host, op);
      return;
    }
    const int64_t total = host.numel();
    const int64_t item = host.element_size();
    auto flat = host.view(-1);
    if ((total / size + 1) * item <= limits.chunk_reduce && total >= size) {
      auto* base = static_cast<uint8_t*>(host.data_ptr());
      std::vector<Carry> chunks(size);
      for (int peer = 0; peer < size; ++peer) {
        const auto range = chunk_range(total, size, peer);
        chunks[peer] = {base + range.first * item, (range.second - range.first) * item};
      }
      exchange_.run(fingerprint, chunks);
      const auto mine = chunk_range(total, size, me);
      auto own = flat.narrow(0, mine.first, mine.second - mine.first);
      fold_in_rank_order(own, carried_parts(own), me, own, op);
      gather_reduced_chunks(host, chunks);
      return;
    }
    exchange_.run(fingerprint);
    Tensors tensors{host};
    c10d::AllreduceOptions options;
    options.reduceOp = c10d::ReduceOp(op);
    transport_->allreduce(tensors, options)->wait();
  }

  // Second half of a chunked all-reduce: every rank sends its reduced chunk (`chunks[rank]`)
  // to every peer and receives theirs in place. Two ranks use the transport's all-to-all,
  // whose messages go out from its worker as its collectives' do; more use one message per
  // pair.
  void gather_reduced_chunks(const at::Tensor& host, const std::vector<Carry>& chunks) {
    const int size = getSize(), me = getRank();
    if (size == 2) {
      const int peer = 1 - me;
      auto view = [](const Carry& chunk) {
        return at::from_blob(const_cast<void*>(chunk.data), {chunk.bytes}, at::kByte);
      };
      auto input = view(chunks[me]);
      auto output = view(chunks[peer]);
      std::vector<int64_t> send_splits(2, 0), receive_splits(2, 0);
      send_splits[peer] = chunks[me].bytes;
      receive_splits[peer] = chunks[peer].bytes;
      c10d::AllToAllOptions options;
      transport_->alltoall_base(output, input, receive_splits, send_splits, options)->wait();
      return;
    }
    std::vector<std::pair<void*, int64_t>> sends(size), receives(size);
    for (int peer = 0; peer < size; ++peer) {
      sends[peer] = {const_cast<void*>(chunks[me].data), chunks[me].bytes};
      receives[peer] = {const_cast<void*>(chunks[peer].data), chunks[peer].bytes};
    }
    transfer_pairwise(sends, receives);
  }

  void exchange_all_gather(at::Tensor output, at::Tensor input, const Fingerprint& fingerprint) {
    const int size = getSize(), me = getRank();
    const int64_t bytes = static_cast<int64_t>(input.nbytes());
    auto* base = static_cast<uint8_t*>(output.data_ptr());
    if (size > 1 && bytes > carry_limits().gather) {
      exchange_.run(fingerprint);
      if (bytes < kPairwiseBytes) {
        transport_->_allgather_base(output, input)->wait();
        return;
      }
      if (base + me * bytes != input.data_ptr()) {
        std::memcpy(base + me * bytes, input.data_ptr(), bytes);
      }
      std::vector<std::pair<void*, int64_t>> sends(size), receives(size);
      for (int peer = 0; peer < size; ++peer) {
        sends[peer] = {input.data_ptr(), bytes};
        receives[peer] = {base + peer * bytes, bytes};
      }
      transfer_pairwise(sends, receives);
      return;
    }
    exchange_.run_same(fingerprint, input.data_ptr(), bytes);
    for (int rank = 0; rank < size; ++rank) {
      const void* source = rank == me ? input.data_ptr() : exchange_.carried(rank);
      if (base + rank * bytes != source) std::memcpy(base + rank * bytes, source, bytes);
    }
  }

  // A reduce-scatter up to the carry limit sends each peer its chunk in the exchange and folds
  // this rank's chunk in rank order.
  void exchange_reduce_scatter(at::Tensor input, at::Tensor output, c10d::ReduceOp::RedOpType op,
                               const Fingerprint& fingerprint) {
    const int me = getRank(), size = getSize();
    const int64_t bytes = static_cast<int64_t>(output.nbytes());
    auto* base = static_cast<uint8_t*>(input.data_ptr());
    auto own = at::from_blob(base + me * bytes, output.sizes(), output.options());
    if (size == 1) {
      fold_in_rank_order(output, {at::Tensor()}, 0, own, op);
      return;
    }
    if (bytes <= carry_limits().gather) {
      std::vector<Carry> chunks(size);
      for (int peer = 0; peer < size; ++peer) chunks[peer] = {base + peer * bytes, bytes};
      exchange_.run(fingerprint, chunks);
      fold_in_rank_order(output, carried_parts(output), me, own, op);
      return;
    }
    exchange_.run(fingerprint);
    if (bytes < kPairwiseBytes) {
      c10d::ReduceScatterOptions options;
      options.reduceOp = c10d::ReduceOp(op);
      transport_->_reduce_scatter_base(output, input, options)->wait();
      return;
    }
    std::vector<std::pair<void*, int64_t>> sends(size), receives(size);
    std::vector<at::Tensor> parts(size);
    for (int peer = 0; peer < size; ++peer) {
      if (peer == me) continue;
      sends[peer] = {base + peer * bytes, bytes};
      void* into = scratch(peer, bytes);
      receives[peer] = {into, bytes};
      parts[peer] = at::from_blob(into, output.sizes(), output.options());
    }
    transfer_pairwise(sends, receives);
    fold_in_rank_order(output, parts, me, own, op);
  }

  // Reduces `input` (world size chunks) across ranks into this rank's chunk, `output`.
  void reduce_scatter_on_host(const at::Tensor& input, at::Tensor output, const ReductionPlan& plan,
                              const c10d::ReduceScatterOptions& opts) {
    auto source = scaled_copy(plan, {input})[0];
    auto transport_opts = opts;
    transport_opts.reduceOp = plan.transport_op;
    transport_->_reduce_scatter_base(output, source, transport_opts)->wait();
    average_after(plan, {output}, getSize());
  }

  // How launch() runs a collective.
  struct How {
    bool async_op = true;  // the caller may not wait for it at once (c10d's asyncOp)
    Agree agree = Agree::kReadSizes;
    int64_t reduce_op = -1;  // compared between ranks when set
    bool folded = false;     // run() sends the fingerprint itself, with its first message
  };

  // Runs `run` (the transport's part of a collective) after the fingerprints agreed: on the
  // communication stream after the current stream's pending work, or, for a synchronous call,
  // on the calling thread once that stream and the communication stream are idle (the same
  // order, without the hand-offs between threads).
  c10::intrusive_ptr<c10d::Work> launch(const char* op_name, c10d::OpType type,
                                        std::shared_ptr<HostBuffers> buffers, Tensors outputs,
                                        std::function<void(const Fingerprint&)> run, How how) {
    const int device = buffers->device();
    auto& queue = CollectiveQueue::for_device(queue_device_);
    runtime::Stream* producer = device >= 0 ? &runtime::current_stream(device) : nullptr;
    const auto signature = buffers->signature(how.agree);
    const Fingerprint fingerprint{static_cast<int64_t>(type), signature.first, signature.second,
                                  how.reduce_op};
    const bool header_only = !how.folded && agreement_checked() && getSize() > 1;
    auto body = [self = keep_alive(), fingerprint, header_only, buffers, run = std::move(run)] {
      if (header_only) self->exchange_.run(fingerprint);
      buffers->copy_in();
      run(fingerprint);
      buffers->copy_out();
    };
    std::shared_ptr<Completion> completion;
    if (!how.async_op && !coalescing_) {
      // A synchronous call: the caller waits for it at once, so the host waits for the work
      // it must follow and runs it itself. Queued, it would leave a wait on the current
      // stream that the next call's collective then has to queue behind, hand-off by hand-off.
      completion = std::make_shared<Completion>();
      auto run_now = [&] {
        queue.wait_until_idle(producer);
        body();
      };
      run_without_gil(*completion, run_now);
    } else {
      buffers->record_on(queue.stream());
      completion = queue.submit(op_name, producer, std::move(body));
    }
    return finish_launch(op_name, type, completion, std::move(outputs), device, false);
  }

  // Queued work holds the backend (and so its transport) until it has run: a group destroyed
  // while a send is still in flight finishes the send first.
  c10::intrusive_ptr<NeuronBackend> keep_alive() {
    return c10::intrusive_ptr<NeuronBackend>::unsafe_reclaim_from_nonowning(this);
  }

  // Starts a transfer on the communication stream and returns the step that waits for its end
  // (given where to store the sender, or null).
  using StartTransfer = std::function<std::function<void(int*)>()>;

  c10::intrusive_ptr<c10d::Work> launch_transfer(const char* op_name, c10d::OpType type,
                                                 std::shared_ptr<HostBuffers> buffers,
                                                 Tensors outputs, std::shared_ptr<int> source,
                                                 bool receive, StartTransfer start) {
    const int device = buffers->device();
    auto& queue = CollectiveQueue::for_device(queue_device_);
    runtime::Stream* producer = device >= 0 ? &runtime::current_stream(device) : nullptr;
    buffers->record_on(queue.stream());
    auto completion = queue.submit_transfer(
        op_name, producer, receive, [self = keep_alive(), buffers, source, start] {
          buffers->copy_in();
          auto finish = start();
          // Bounded by the group timeout: a peer that never sends or receives raises.
          return std::function<void()>([self, buffers, source, finish] {
            finish(source.get());
            buffers->copy_out();
          });
        });
    // The caller of an any-source receive asks for the sender next, which blocks the host
    // anyway: its wait() blocks the host too and raises there, leaving no error on the stream.
    const bool host_wait = source != nullptr;
    auto work = finish_launch(op_name, type, completion, std::move(outputs), device, host_wait);
    if (source) static_cast<NeuronWork*>(work.get())->set_source_rank(source);
    return work;
  }

  c10::intrusive_ptr<c10d::Work> finish_launch(const char* op_name, c10d::OpType type,
                                               std::shared_ptr<Completion> completion,
                                               Tensors outputs, int device, bool host_wait) {
    ++sequence_number_;
    if (coalescing_) {
      coalesced_.push_back(completion);
      coalesced_outputs_.insert(coalesced_outputs_.end(), outputs.begin(), outputs.end());
      if (device >= 0) coalesced_device_ = device;
    }
    return c10::make_intrusive<NeuronWork>(getRank(), type, op_name, std::move(completion),
                                           std::move(outputs), device, host_wait);
  }

  c10::intrusive_ptr<c10d::Store> store_;
  std::chrono::milliseconds timeout_;
  c10::intrusive_ptr<c10d::Backend> transport_;
  FingerprintExchange exchange_;     // after transport_
  std::vector<at::Tensor> scratch_;  // per peer: what it sent a large reduce-scatter
  HostFactory factory_;
  const int queue_device_;
  bool coalescing_ = false;
  std::vector<std::shared_ptr<Completion>> coalesced_;
  Tensors coalesced_outputs_;
  int coalesced_device_ = -1;
  uint64_t sequence_number_ = 0;
};

// Wraps the Python factory so copies and the last release take the GIL.
HostFactory wrap_factory(py::function factory) {
  auto held = std::shared_ptr<py::object>(new py::object(std::move(factory)), [](py::object* f) {
    if (!Py_IsInitialized()) return;  // at exit: leak rather than touch a finalised interpreter
    py::gil_scoped_acquire gil;
    delete f;
  });
  return [held](const c10::intrusive_ptr<c10d::Store>& store, int rank, int size,
                std::chrono::milliseconds timeout) {
    py::gil_scoped_acquire gil;
    return (*held)(store, rank, size, timeout).cast<c10::intrusive_ptr<c10d::Backend>>();
  };
}

}  // namespace

void register_distributed_bindings(py::module_& module) {
  py::class_<NeuronBackendOptions, c10d::Backend::Options,
             c10::intrusive_ptr<NeuronBackendOptions>>(module, "NeuronBackendOptions",
                                                       "Options of a neuron backend group.")
      .def("__deepcopy__", [](const NeuronBackendOptions& options, py::dict) {
        return c10::make_intrusive<NeuronBackendOptions>(options);
      });
  py::class_<NeuronBackend, c10d::Backend, c10::intrusive_ptr<NeuronBackend>>(
      module, "NeuronBackend",
      "The c10d backend for neuron tensors: collectives run over a host transport backend on the "
      "device's communication stream.")
      .def(py::init([](const c10::intrusive_ptr<c10d::Store>& store, int rank, int size,
                       std::chrono::milliseconds timeout,
                       const c10::intrusive_ptr<c10d::Backend>& transport, py::function factory) {
             return c10::make_intrusive<NeuronBackend>(store, rank, size, timeout, transport,
                                                       wrap_factory(std::move(factory)));
           }),
           py::arg("store"), py::arg("rank"), py::arg("size"), py::arg("timeout"),
           py::arg("transport"), py::arg("transport_factory"))
      .def_property_readonly(
          "options", [](NeuronBackend& backend) { return backend.getBackendOptions(); },
          "The group's options (split_group copies them for the new group).")
      .def(
          "perform_nocolor_split", [](NeuronBackend&, const py::object&) {},
          "Called on ranks left out of a new group; each group's transport connects on its own, "
          "so they have nothing to do.");
}

}  // namespace openneuron::bridge
