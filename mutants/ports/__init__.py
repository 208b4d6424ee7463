"""Whole broken ports: each module a cache on top of `paged` (or the oracle) with one bug, or a module that
misbehaves its process; each docstring names the meta-test that shows it refused. Imported in process as
`mutants.ports.NAME`, or by its bare name with this folder on PYTHONPATH (`ci/gate --impl NAME`)."""
