"""Registry-scan integration tests: ``fathom scan`` end to end, history, queries, interruption, the crawl stage."""
