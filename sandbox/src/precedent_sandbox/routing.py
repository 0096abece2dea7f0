"""Routing: the Kubernetes REST paths as an aiohttp route table, answered from the store.

Discovery (``/api``, ``/apis``, ``/version``), OpenAPI (``/openapi/v2``, ``/openapi/v3``),
health checks, and resource paths in their cluster
(``/apis/{group}/{version}/{resource}[/{name}[/{subresource}]]``) and namespaced
(``…/namespaces/{namespace}/{resource}…``) forms. Every API error becomes a
``Status`` response (:func:`_api_errors` middleware); unknown paths are 404 ``NotFound``.
"""

from __future__ import annotations

import json
from typing import Any

import yaml
from aiohttp import web

from precedent_sandbox import discovery, openapi, rbac
from precedent_sandbox import errors as api_errors
from precedent_sandbox.auth import ANONYMOUS, CURRENT_USER, UserInfo, bearer_token
from precedent_sandbox.errors import ApiError
from precedent_sandbox.meta import FieldSelector, LabelSelector
from precedent_sandbox.objects import loads
from precedent_sandbox.protobuf import decode_object
from precedent_sandbox.rbac import Attributes, RbacAuthorizer
from precedent_sandbox.registry import ResourceType
from precedent_sandbox.render import (
    JSON,
    Output,
    flag,
    items_response,
    json_response,
    object_response,
    partial,
    status_response,
    table_of,
)
from precedent_sandbox.store import Store
from precedent_sandbox.watchstream import serve_watch

__all__ = ["ApiServer"]

_PROTOBUF = "application/vnd.kubernetes.protobuf"
_PATCH_TYPES = {
    "application/merge-patch+json": "merge",
    "application/json-patch+json": "json",
    "application/strategic-merge-patch+json": "strategic",
    "application/apply-patch+yaml": "apply",
    "application/apply-patch+cbor": "unsupported",
}


@web.middleware
async def _api_errors(request: web.Request, handler: Any) -> web.StreamResponse:
    """Every API error as a ``Status`` response; undecodable bodies as 400 BadRequest."""
    try:
        response: web.StreamResponse = await handler(request)
    except ApiError as error:
        return status_response(error)
    except (json.JSONDecodeError, yaml.YAMLError, UnicodeDecodeError) as error:
        return status_response(
            api_errors.bad_request(f"the body of the request could not be decoded: {error}")
        )
    return response


class ApiServer:
    """Routes REST requests to the store and renders its answers."""

    def __init__(
        self,
        store: Store,
        *,
        bookmark_interval: float = 60.0,
        watch_timeout: float = 1800.0,
        tokens: dict[str, UserInfo] | None = None,
        authorizer: RbacAuthorizer | None = None,
    ) -> None:
        self.store = store
        self.bookmark_interval = bookmark_interval
        self.watch_timeout = watch_timeout
        self.address = "127.0.0.1:0"
        # Both None: no authentication or authorization at all, and no middleware for them.
        self.tokens = tokens
        self.authorizer = authorizer

    def routes(self) -> list[web.RouteDef]:
        """The route table. Namespaced resource paths come before the cluster-scoped ones."""
        core, group = "/api/v1", "/apis/{group}/{version}"
        table = [
            web.route("*", "/", self._root),
            *(
                web.route("*", f"/{check}", self._health)
                for check in ("healthz", "livez", "readyz")
            ),
            web.route("*", "/version", self._version),
            web.route("*", "/openapi/v2", self._openapi_v2),
            web.route("*", "/openapi/v3", self._openapi_paths),
            web.route("*", "/openapi/v3/api/{version}", self._openapi_document),
            web.route("*", "/openapi/v3/apis/{group}/{version}", self._openapi_document),
            web.route("*", "/api", self._core_versions),
            web.route("*", core, self._core_resources),
            web.route("*", "/apis", self._groups),
            web.route("*", "/apis/{group}", self._group),
            web.route("*", group, self._group_resources),
        ]
        for prefix, handler in ((core, self._core_resource), (group, self._group_resource)):
            for path in _RESOURCE_PATHS:
                table.append(web.route("*", prefix + path, handler))
        # Last: anything else is a Status 404, as the real server answers.
        table.append(web.route("*", "/{tail:.*}", self._not_found))
        return table

    def make_app(self) -> web.Application:
        """The aiohttp application serving :meth:`routes`."""
        middlewares: list[Any] = [_api_errors]
        if self.tokens is not None or self.authorizer is not None:
            middlewares.append(self._authentication_middleware())
        app = web.Application(client_max_size=16 * 1024 * 1024, middlewares=middlewares)
        app.router.add_routes(self.routes())
        app.on_shutdown.append(self._on_shutdown)
        return app

    def _authentication_middleware(self) -> Any:
        tokens = self.tokens
        authorizer = self.authorizer
        resource_handlers = (self._core_resource, self._group_resource)

        @web.middleware
        async def authenticate(request: web.Request, handler: Any) -> web.StreamResponse:
            user = ANONYMOUS
            if tokens is not None:
                token = bearer_token(request.headers.get("Authorization"))
                if token is not None:
                    found = tokens.get(token)
                    if found is None:
                        raise rbac.unauthorized()
                    user = found
            CURRENT_USER.set(user)
            if authorizer is not None and request.match_info.handler not in resource_handlers:
                # Discovery, /version, /healthz …: non-resource URLs.
                method = request.method.lower()
                attrs = Attributes(
                    "get" if method == "head" else method,
                    resource_request=False,
                    path=request.path,
                )
                if not authorizer.authorize(user, attrs)[0]:
                    raise rbac.forbidden(user, attrs)
            response: web.StreamResponse = await handler(request)
            return response

        return authenticate

    def _authorize(
        self,
        request: web.Request,
        group: str,
        version: str,
        plural: str,
        namespace: str | None,
        name: str | None,
        subresource: str | None,
    ) -> None:
        authorizer = self.authorizer
        if authorizer is None:
            return
        method = request.method
        if method == "GET":
            verb = "watch" if flag(request.query.get("watch")) else ("get" if name else "list")
        elif method == "DELETE":
            verb = "delete" if name else "deletecollection"
        else:
            verb = _VERBS.get(method, method.lower())
        if plural == "namespaces" and not group and name and namespace is None:
            namespace = name  # /api/v1/namespaces/{name}: the namespace is the object itself
        attrs = Attributes(
            verb,
            group=group,
            version=version,
            resource=plural,
            subresource=subresource or "",
            namespace=namespace or "",
            name=name or "",
        )
        user = CURRENT_USER.get()
        if not authorizer.authorize(user, attrs)[0]:
            raise rbac.forbidden(user, attrs)

    async def _review(self, request: web.Request, rtype: ResourceType) -> web.StreamResponse:
        """SelfSubjectAccessReview and SelfSubjectReview: answered for the caller, not stored."""
        if request.method != "POST":
            raise api_errors.method_not_allowed()
        body = await self._body(request)
        if not isinstance(body, dict):
            raise api_errors.bad_request(f"the body must be a {rtype.kind}")
        user = CURRENT_USER.get()
        answer: dict[str, Any] = {
            "kind": rtype.kind,
            "apiVersion": rtype.api_version(),
            "metadata": {"creationTimestamp": None},
        }
        if rtype.plural == "selfsubjectreviews":
            answer["status"] = {"userInfo": user.as_dict()}
            return json_response(answer, 201)
        spec = body.get("spec") if isinstance(body.get("spec"), dict) else {}
        assert isinstance(spec, dict)
        resource = spec.get("resourceAttributes")
        path = spec.get("nonResourceAttributes")
        if isinstance(resource, dict) == isinstance(path, dict):
            raise api_errors.invalid(
                rtype.kind,
                rtype.group,
                "",
                [
                    api_errors.FieldError(
                        "invalid",
                        "spec.resourceAttributes",
                        None,
                        "exactly one of nonResourceAttributes or resourceAttributes must be "
                        "specified",
                    )
                ],
            )
        if isinstance(resource, dict):
            attrs = Attributes(
                str(resource.get("verb", "")),
                group=str(resource.get("group", "")),
                version=str(resource.get("version", "")),
                resource=str(resource.get("resource", "")),
                subresource=str(resource.get("subresource", "")),
                namespace=str(resource.get("namespace", "")),
                name=str(resource.get("name", "")),
            )
        else:
            assert isinstance(path, dict)
            attrs = Attributes(
                str(path.get("verb", "")), resource_request=False, path=str(path.get("path", ""))
            )
        allowed, reason = (
            self.authorizer.authorize(user, attrs) if self.authorizer is not None else (True, "")
        )
        status: dict[str, Any] = {"allowed": allowed}
        if reason:
            status["reason"] = reason
        answer["spec"] = spec
        answer["status"] = status
        return json_response(answer, 201)

    async def _on_shutdown(self, _: web.Application) -> None:
        self.store.close_watches()

    async def _root(self, _: web.Request) -> web.StreamResponse:
        return json_response({"paths": ["/api", "/api/v1", "/apis", "/openapi/v3", "/version"]})

    async def _health(self, _: web.Request) -> web.StreamResponse:
        return web.Response(text="ok", content_type="text/plain")

    async def _version(self, _: web.Request) -> web.StreamResponse:
        return json_response(discovery.version_info())

    async def _not_found(self, _: web.Request) -> web.StreamResponse:
        raise api_errors.path_not_found()

    # -- discovery -------------------------------------------------------------------------

    def _types(self) -> list[ResourceType]:
        return list(self.store.types.values())

    def _aggregated(self, request: web.Request, *, core: bool) -> web.Response | None:
        wanted = Output(request.headers.get("Accept", "")).discovery
        if wanted is None:
            return None
        body = discovery.aggregated(self._types(), core=core, version=wanted)
        content_type = f"application/json;g=apidiscovery.k8s.io;v={wanted};as=APIGroupDiscoveryList"
        return json_response(body, content_type=content_type)

    async def _core_versions(self, request: web.Request) -> web.StreamResponse:
        if request.method != "GET":
            raise api_errors.method_not_allowed()
        aggregated = self._aggregated(request, core=True)
        return aggregated or json_response(discovery.api_versions(self.address))

    async def _core_resources(self, _: web.Request) -> web.StreamResponse:
        listed = discovery.api_resource_list(self._types(), "", "v1")
        if listed is None:
            raise api_errors.path_not_found()
        return json_response(listed)

    async def _groups(self, request: web.Request) -> web.StreamResponse:
        if request.method != "GET":
            raise api_errors.method_not_allowed()
        aggregated = self._aggregated(request, core=False)
        return aggregated or json_response(discovery.api_group_list(self._types()))

    async def _group(self, request: web.Request) -> web.StreamResponse:
        found = discovery.api_group(self._types(), request.match_info["group"])
        if found is None:
            raise api_errors.path_not_found()
        return json_response(found)

    async def _group_resources(self, request: web.Request) -> web.StreamResponse:
        info = request.match_info
        listed = discovery.api_resource_list(self._types(), info["group"], info["version"])
        if listed is None:
            raise api_errors.path_not_found()
        return json_response(listed)

    # /openapi/v2 stays 404: kubectl then relies on /openapi/v3 (or on server validation).

    async def _openapi_v2(self, request: web.Request) -> web.StreamResponse:
        # kube-apiserver also serves it as gnostic protobuf (what client-go's discovery asks
        # for); the sandbox has JSON only and says so with 406, as for any unserved type.
        accept = request.headers.get("Accept", "*/*")
        if not any(
            kind.split(";")[0].strip() in (JSON, "application/*", "*/*")
            for kind in accept.split(",")
        ):
            raise api_errors.not_acceptable()
        return json_response(openapi.v2_document(self._types()))

    async def _openapi_paths(self, _: web.Request) -> web.StreamResponse:
        return json_response(openapi.v3_index(self._types()))

    async def _openapi_document(self, request: web.Request) -> web.StreamResponse:
        info = request.match_info
        document = openapi.v3_document(self._types(), info.get("group", ""), info["version"])
        if document is None:
            raise api_errors.path_not_found()
        return json_response(document)

    # -- resources -------------------------------------------------------------------------

    async def _core_resource(self, request: web.Request) -> web.StreamResponse:
        return await self._resource(request, "", "v1")

    async def _group_resource(self, request: web.Request) -> web.StreamResponse:
        info = request.match_info
        return await self._resource(request, info["group"], info["version"])

    async def _resource(self, request: web.Request, group: str, version: str) -> web.StreamResponse:
        info = request.match_info
        namespace: str | None = info.get("namespace")
        plural = info["resource"]
        name: str | None = info.get("name")
        subresource: str | None = info.get("subresource")
        if namespace is not None:
            found = self.store.types.get((group, plural))
            if found is None or not found.namespaced:
                # Not namespaced content: /namespaces/{name}/{subresource} of a Namespace.
                if name is not None:
                    raise api_errors.path_not_found()
                namespace, plural, name, subresource = None, "namespaces", namespace, plural
        if self.authorizer is not None:
            self._authorize(request, group, version, plural, namespace, name, subresource)
        rtype = self.store.lookup(group, version, plural)
        if rtype.review:
            return await self._review(request, rtype)
        if subresource is not None and subresource not in rtype.subresources:
            raise api_errors.path_not_found()
        if rtype.namespaced and namespace is None and name is not None:
            raise api_errors.path_not_found()
        method = request.method
        query = request.query
        if name is None:
            if method == "GET":
                labels = LabelSelector(query.get("labelSelector"))
                fields = FieldSelector(query.get("fieldSelector"), rtype.field_selectors)
                if flag(query.get("watch")):
                    return await serve_watch(
                        request,
                        self.store,
                        rtype,
                        version,
                        namespace,
                        labels,
                        fields,
                        bookmark_interval=self.bookmark_interval,
                        watch_timeout=self.watch_timeout,
                    )
                return self._list(request, rtype, version, namespace, labels, fields)
            if method == "POST":
                if rtype.namespaced and namespace is None:
                    raise api_errors.method_not_allowed()
                body = await self._body(request)
                result = self.store.create(
                    rtype,
                    namespace or "",
                    body,
                    dry_run=self._dry_run(request),
                    validation=self._validation(request),
                )
                return object_response(
                    request, rtype, version, result.stored, result.code, result.warnings
                )
            if method == "DELETE":
                labels = LabelSelector(query.get("labelSelector"))
                fields = FieldSelector(query.get("fieldSelector"), rtype.field_selectors)
                deleted = self.store.delete_collection(rtype, namespace, labels, fields)
                return items_response(rtype, version, deleted, self.store.rv)
            raise api_errors.method_not_allowed()
        space = namespace or ""
        if method == "GET":
            stored = self.store.get(rtype, space, name)
            return object_response(request, rtype, version, stored)
        if method == "PUT":
            body = await self._body(request)
            result = self.store.replace(
                rtype,
                space,
                name,
                body,
                subresource=subresource,
                dry_run=self._dry_run(request),
                validation=self._validation(request),
            )
            return object_response(
                request, rtype, version, result.stored, result.code, result.warnings
            )
        if method == "PATCH":
            content_type = request.headers.get("Content-Type", "").split(";")[0].strip()
            patch_type = _PATCH_TYPES.get(content_type)
            if patch_type is None or patch_type == "unsupported":
                raise api_errors.unsupported_media_type(content_type)
            text = await request.text()
            patch = yaml.safe_load(text) if patch_type == "apply" else json.loads(text)
            result = self.store.patch(
                rtype,
                space,
                name,
                patch_type,
                patch,
                subresource=subresource,
                dry_run=self._dry_run(request),
                validation=self._validation(request),
                field_manager=query.get("fieldManager"),
            )
            return object_response(
                request, rtype, version, result.stored, result.code, result.warnings
            )
        if method == "DELETE":
            if subresource is not None:
                raise api_errors.method_not_allowed()
            text = await request.text()
            options = json.loads(text) if text.strip() else {}
            result = self.store.delete(
                rtype,
                space,
                name,
                options if isinstance(options, dict) else {},
                dry_run=self._dry_run(request),
            )
            if result.gone:
                return json_response(
                    {
                        "kind": "Status",
                        "apiVersion": "v1",
                        "metadata": {},
                        "status": "Success",
                        "details": {
                            "name": name,
                            **({"group": rtype.group} if rtype.group else {}),
                            "kind": rtype.plural,
                            "uid": result.stored.obj["metadata"].get("uid", ""),
                        },
                    }
                )
            return object_response(request, rtype, version, result.stored, 200)
        raise api_errors.method_not_allowed()

    async def _body(self, request: web.Request) -> Any:
        content_type = request.headers.get("Content-Type", JSON).split(";")[0].strip()
        if content_type == _PROTOBUF:
            try:
                decoded = decode_object(await request.read())
            except (ValueError, IndexError, UnicodeDecodeError):
                decoded = None
            if decoded is None:
                raise api_errors.unsupported_media_type(content_type)
            return decoded
        text = await request.text()
        if content_type in ("application/yaml", "application/x-yaml", "text/yaml"):
            return yaml.safe_load(text)
        if content_type not in (JSON, "", "text/plain", "*/*"):
            raise api_errors.unsupported_media_type(content_type)
        return loads(text)

    @staticmethod
    def _dry_run(request: web.Request) -> bool:
        return "All" in request.query.getall("dryRun", [])

    @staticmethod
    def _validation(request: web.Request) -> str:
        value = request.query.get("fieldValidation", "Warn")
        if value not in ("Strict", "Warn", "Ignore"):
            raise api_errors.bad_request(
                f'fieldValidation must be one of "Ignore", "Warn", or "Strict", not "{value}"'
            )
        return value

    # -- lists -----------------------------------------------------------------------------

    def _list(
        self,
        request: web.Request,
        rtype: ResourceType,
        version: str,
        namespace: str | None,
        labels: LabelSelector,
        fields: FieldSelector,
    ) -> web.Response:
        query = request.query
        try:
            limit = int(query.get("limit") or 0)
        except ValueError:
            raise api_errors.bad_request("limit must be an integer") from None
        result = self.store.list_objects(
            rtype, namespace, labels, fields, limit=max(limit, 0), token=query.get("continue", "")
        )
        metadata: dict[str, Any] = {"resourceVersion": str(result.rv)}
        if result.token:
            metadata["continue"] = result.token
            metadata["remainingItemCount"] = result.remaining
        output = Output(request.headers.get("Accept", ""))
        if output.kind == "table":
            return json_response(table_of(request, rtype, version, result.items, metadata, output))
        if output.kind == "partial":
            return json_response(
                {
                    "kind": "PartialObjectMetadataList",
                    "apiVersion": "meta.k8s.io/v1",
                    "metadata": metadata,
                    "items": [partial(s.obj) for s in result.items],
                }
            )
        return items_response(rtype, version, result.items, result.rv, metadata)


_VERBS = {"POST": "create", "PUT": "update", "PATCH": "patch"}

# Under /api/v1 and /apis/{group}/{version}; the namespaced forms are matched first.
_RESOURCE_PATHS = (
    "/namespaces/{namespace}/{resource}",
    "/namespaces/{namespace}/{resource}/{name}",
    "/namespaces/{namespace}/{resource}/{name}/{subresource}",
    "/{resource}",
    "/{resource}/{name}",
    "/{resource}/{name}/{subresource}",
)
