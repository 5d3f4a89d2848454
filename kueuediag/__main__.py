from kueuediag.cli import main

main()
