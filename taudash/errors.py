"""Exit codes of the output contract (docs/rules.md#output-contract)."""

EXIT_OK = 0
EXIT_CRITICAL = 1
EXIT_BAD_INPUT = 2
EXIT_UNREACHABLE = 3


class UsageError(Exception):
    """Bad input or usage: one line, exit 2."""

    code = EXIT_BAD_INPUT


class Unreachable(Exception):
    """The cluster cannot be reached: one line, exit 3."""

    code = EXIT_UNREACHABLE
