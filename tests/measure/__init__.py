"""Tests of scanner/measure/: what one tool list costs and how it reads."""
