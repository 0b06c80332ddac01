"""``python -m scanner`` runs the ``fathom`` command line."""

from scanner.cli import main

main()
