"""The sandbox API server: an in-memory Kubernetes API on loopback for kopf and kubectl.

``async with Sandbox(crds_dir) as sb`` runs it on the current loop; ``SandboxThread(crds_dir)``
runs it on a loop of its own in a background thread; ``precedent-sandbox`` (or
``python -m precedent_sandbox``) runs it from the shell. Both write a kubeconfig
(``write_kubeconfig(path)``) that kubectl and kopf accept.
"""

from precedent_sandbox.runner import Sandbox, SandboxThread, load_crd_documents
from precedent_sandbox.store import Store

__all__ = ["Sandbox", "SandboxThread", "Store", "load_crd_documents"]
