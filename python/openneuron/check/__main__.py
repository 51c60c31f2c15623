from openneuron.check.cli import main

main()
