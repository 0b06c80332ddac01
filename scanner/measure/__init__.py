"""What one tool list costs and how it reads.

``toollist.measure`` is the one measurement (every provider's view and token count, each tool's cost, the rule
catalogue's findings) that the scan, the store and ``fathom check`` all call. Beside it: ``tokenizer`` (the
offline o200k_base encoding, or none), ``score`` (the leaderboard's number), ``clients`` (what each MCP client
sends per turn), ``verdicts`` (will each client load the list), ``instructions`` (the server's own text),
``metrics`` (the per-scan numbers history keeps) and ``history`` (what changed between two lists). The provider
views (:mod:`scanner.providers`) and the rules (:mod:`scanner.rules`) are rooms of their own beside this one.
"""
