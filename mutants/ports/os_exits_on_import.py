"""A deliberately broken implementation:
it ends the process (os._exit(0)) as it is imported.
meta_tests/test_gate.py::test_an_implementation_that_ends_the_process_never_passes shows the gate never passes it.
"""

import os

os._exit(0)
