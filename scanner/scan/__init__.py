"""A registry night: ``night`` resolves a registry, crawls it and stores every result; ``crawl`` is the ONE
concurrent place (bounded, one writer); ``lanes`` scans an entry without and with its credential; ``doctor``
says what each credential sees; ``progress`` draws the bar on standard error.
"""
