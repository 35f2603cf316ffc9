"""``python -m sleuth`` runs the command line."""

from sleuth.cli.main import main

main()
