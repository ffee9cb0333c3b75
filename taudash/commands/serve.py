"""`taudash serve` on the command line: its options, checked, then the service (taudash/serve/service.py)."""

from __future__ import annotations

import asyncio

from ..errors import UsageError
from .options import add_prometheus_arg, add_source_args

DEFAULT_INTERVAL = 2.0  # seconds between derivations


def register(sub) -> None:
    s = sub.add_parser("serve")
    add_source_args(s)
    add_prometheus_arg(s)
    s.add_argument("--metrics", metavar="ADDR",
                   help="serve Prometheus metrics on ADDR: PORT or :PORT (127.0.0.1), or HOST:PORT (default: off)")
    w = s.add_argument_group("wallboard (docs/wallboard.md)")
    w.add_argument("--web", metavar="ADDR",
                   help="show the dashboard to browsers on ADDR: PORT or :PORT (127.0.0.1), or HOST:PORT "
                        "(off loopback only with a token); read-only by construction (default: off)")
    w.add_argument("--web-token", metavar="TOKEN",
                   help="access token the browsers (and fleet clients of /api/v1/status) must present "
                        "(default: $TAUDASH_WEB_TOKEN; prefer the variable: a command line is visible to every "
                        "user of the machine)")
    w.add_argument("--kiosk", metavar="SCREENS",
                   help="rotate every browser through these screens, comma-separated (e.g. overview,queues,pool)")
    w.add_argument("--kiosk-interval", type=float, default=30.0, metavar="SECONDS",
                   help="seconds on each kiosk screen (default 30)")
    s.add_argument("--interval", type=float, default=DEFAULT_INTERVAL, metavar="SECONDS",
                   help=f"seconds between derivations (default {DEFAULT_INTERVAL:g})")
    s.add_argument("--speed", type=float, default=10.0, help="with --demo: simulated seconds per wall second")
    s.add_argument("--seed", type=int, default=1, help="with --demo: random seed of the simulated world")
    s.set_defaults(func=run_serve)


def run_serve(args) -> int:
    from ..serve.exporter import AddressError, parse_address

    if not args.interval > 0:
        raise UsageError("--interval must be a positive number of seconds")
    chosen = [x for x in (args.snapshot, args.context, args.demo or None) if x]
    if len(chosen) > 1:
        raise UsageError("choose one source: --snapshot FILE, --context NAME or --demo")
    address = None
    if args.metrics is not None:
        try:
            address = parse_address(args.metrics)
        except AddressError as exc:
            raise UsageError(str(exc)) from None
    from ..serve.service import Serve

    return asyncio.run(Serve(args, address, web_options(args)).main())


def web_options(args):
    """The wallboard's options from the command line, or None without --web (UsageError when unusable)."""
    from ..serve.exporter import AddressError, parse_address
    from ..serve.web import OptionsError, WebOptions, parse_kiosk, token_from

    if args.web is None:
        if args.kiosk or (args.web_token and args.metrics is None):
            raise UsageError("--web-token applies to the wallboard and the agent's status, --kiosk to the "
                             "wallboard: add --web ADDR (or --metrics ADDR for the token)")
        from ..serve.access import MIN_TOKEN, token_from

        token = token_from(args.web_token)
        if token is not None and len(token) < MIN_TOKEN:
            raise UsageError(f"the access token must be at least {MIN_TOKEN} characters")
        return None
    try:
        address = parse_address(args.web)
    except AddressError as exc:
        raise UsageError(str(exc).replace("--metrics", "--web")) from None
    try:
        return WebOptions(address, token_from(args.web_token), parse_kiosk(args.kiosk), args.kiosk_interval)
    except OptionsError as exc:
        raise UsageError(str(exc)) from None
