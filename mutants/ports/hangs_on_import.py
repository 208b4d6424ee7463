"""A deliberately broken implementation:
it never returns from its import.
meta_tests/test_gate.py::test_an_implementation_that_ends_the_process_never_passes shows the gate never passes it.
"""

import time

time.sleep(600)
