"""The engines' field bugs (the team's engine notes, ENGINES.md, "Bugs those engines shipped"), planted back in a copy
of the installed engine by `python -m mutants --engine NAME` (NAME an adapter's file stem, engines/NAME.py; runner.py here).

vNN: vLLM 0.33.0; wNN: vLLM 0.33.0's sliding window (`--engine vllm_window`, the vllm_window adapter); tNN: vLLM 0.33.0's served retention, prefix_cache_retention_interval=0 (`--engine vllm_window_served`); nNN: nano-vllm-fork 20260210. Each `MUTANT` edits files relative to site-packages;
`notes` names the ENGINES.md bug it models. A mutant whose notes start with SURVIVOR is expected to
survive, for the reason given there (the run fails if any other survives).
"""
