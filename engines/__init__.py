"""Real engines' block managers behind the contract: one adapter module per engine configuration, each
`engines.NAME` (`--impl engines.vllm_v1`, `python -m mutants --engine vllm_v1`: an adapter's name is its
file's stem), with its expected failures in NAME.xfails beside it (engines/README.md)."""
