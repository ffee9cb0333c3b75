"""taudash in the cluster: the manifests `taudash deploy manifests` prints and deploy/base/ ships (docs/deploy.md)."""
