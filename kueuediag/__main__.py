from kueuediag.console import main

main()
