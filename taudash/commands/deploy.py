"""`taudash deploy manifests`: the least-privilege manifests that run `taudash serve` in a cluster (docs/deploy.md)."""

from __future__ import annotations

import sys

from ..errors import UsageError


def register(sub) -> None:
    d = sub.add_parser("deploy")  # its help line: COMMANDS in commands/__init__.py
    verbs = d.add_subparsers(dest="deploy_verb", metavar="VERB", required=True)
    m = verbs.add_parser(
        "manifests",
        help="print Namespace, ServiceAccount, a read-only ClusterRole and its binding, a Deployment of "
             "`taudash serve --metrics` and its Service (apply with `kubectl apply -f -`)",
        description="The ClusterRole grants only get, list and watch on what taudash reads (every kind of the "
                    "engine's registry, Events, Kueue's pending workloads), never Secrets. deploy/base/ ships the "
                    "same documents as a Kustomize base.")
    m.add_argument("--namespace", "-n", default=None, metavar="NS", help="namespace to run in (default taudash)")
    m.add_argument("--web", action="store_true",
                   help="also serve the read-only wallboard (its token from Secret taudash-web, key token)")
    m.add_argument("--image", metavar="REF", default=None, help="the container image (default taudash:VERSION)")
    m.add_argument("--service-monitor", action="store_true",
                   help="append a ServiceMonitor (needs the Prometheus Operator's CRD)")
    m.set_defaults(func=run_manifests)


def run_manifests(args) -> int:
    from ..deploy.manifests import DEFAULT_IMAGE, DEFAULT_NAMESPACE, Options, render

    ns = args.namespace or DEFAULT_NAMESPACE
    if not _dns_label(ns):
        raise UsageError(f"--namespace {ns!r}: a namespace is a DNS label (a-z, 0-9, '-', at most 63)")
    image = args.image or DEFAULT_IMAGE
    if not image.strip() or any(c.isspace() for c in image):
        raise UsageError(f"--image {image!r}: an image reference has no spaces")
    sys.stdout.write(render(Options(ns, args.web, image), service_monitor_doc=args.service_monitor))
    return 0


def _dns_label(s: str) -> bool:
    return 0 < len(s) <= 63 and s[0].isalnum() and s[-1].isalnum() and all(
        c.isdigit() or ("a" <= c <= "z") or c == "-" for c in s)
