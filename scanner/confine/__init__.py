"""The child's confinement in one room: every program Fathom starts (a registry package, a ``--run-commands``
command, a worker's job, ``check --stdio``'s server) is started confined from here."""
