"""What server interceptors share: replacing a method handler's behaviour while keeping its kind
and (de)serializers."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import grpc

#: The four kinds of method handler, with the factory that makes each.
_KINDS: dict[str, Callable[..., grpc.RpcMethodHandler[Any, Any]]] = {
    "unary_unary": grpc.unary_unary_rpc_method_handler,
    "unary_stream": grpc.unary_stream_rpc_method_handler,
    "stream_unary": grpc.stream_unary_rpc_method_handler,
    "stream_stream": grpc.stream_stream_rpc_method_handler,
}


def rewrap(handler: Any, wrappers: dict[str, Callable[[Any], Any]]) -> Any:
    """``handler`` with its behaviour passed through ``wrappers[kind]`` (kinds: ``unary_unary``,
    ``unary_stream``, ``stream_unary``, ``stream_stream``); unchanged when its kind has none."""
    for kind, make in _KINDS.items():
        behaviour = getattr(handler, kind)
        if behaviour is not None:
            wrap = wrappers.get(kind)
            if wrap is None:
                return handler
            return make(
                wrap(behaviour),
                request_deserializer=handler.request_deserializer,
                response_serializer=handler.response_serializer,
            )
    return handler


#: How an interceptor changes each kind of call (``rewrap``'s ``wrappers``).
Wrappers = dict[str, Callable[[Any], Any]]


class CallInterceptor(grpc.aio.ServerInterceptor):
    """A server interceptor that wraps the behaviour of the calls it handles: ``wrappers(method)``
    says how for each kind (None: the method passes unchanged)."""

    async def intercept_service(
        self,
        continuation: Callable[[grpc.HandlerCallDetails], Awaitable[Any]],
        handler_call_details: grpc.HandlerCallDetails,
    ) -> Any:
        handler = await continuation(handler_call_details)
        if handler is None:
            return handler
        wrappers = self.wrappers(handler_call_details.method)
        return handler if wrappers is None else rewrap(handler, wrappers)

    def wrappers(self, method: str) -> Wrappers | None:
        raise NotImplementedError
