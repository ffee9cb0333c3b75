import os
import sys
from pathlib import Path

# Tests import small helpers (tests/factories.py) by module name.
sys.path.insert(0, str(Path(__file__).parent))

# A simulated controller's write the Kueue CRDs refuse raises in tests instead of being logged and
# dropped (taudash/sim/controllers/base.py): a controller bug fails loudly.
os.environ.setdefault("TAUDASH_SIM_STRICT", "1")
