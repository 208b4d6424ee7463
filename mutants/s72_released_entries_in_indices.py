"""s72: a window's released (-1) entries left in the exported indices (page tables for kernels)."""

from . import Edit, Mutant

MUTANT = Mutant(
    id='s72',
    title='a released window entry (-1) left in indices',
    symptom="a windowed layer exports its pages from position 0: a released entry becomes page -r + j, which a kernel "
    "reads as the pool's last pages (vLLM #42273 / #42276: stale ids after a window's release)",
    caught_by=('test_the_issue_example_at_every_length', 'TestWindowMachine'),
    edits=(
        Edit('paged/cache.py', '        starts = [self._groups[gi].visible_from(n) for n in lens]\n', '        starts = [0 for n in lens]\n'),
    ),
)
