"""``python -m assay`` runs the CLI (handy inside a virtual environment)."""

from assay.cli import main

main()
