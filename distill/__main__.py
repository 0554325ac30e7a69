"""`python -m distill` runs the command line."""

from distill.service.cli import main

main()
