"""The pure core: scoring, retrieval ranking, playbook selection and policy.

Nothing here imports kopf, kubernetes, httpx, faiss, aiohttp or prometheus_client, nor does
any I/O; adapters at the edge feed it data and carry its answers out (checked by import-linter).
"""
