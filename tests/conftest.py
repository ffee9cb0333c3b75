import sys
from pathlib import Path

# Tests import small helpers (tests/factories.py) by module name.
sys.path.insert(0, str(Path(__file__).parent))
