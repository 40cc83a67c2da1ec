"""moto's models kept for its dashboard only while S3 needs them (``untracked-models``, an engine change).

moto's ``BaseModel.__new__`` appends every model instance it makes to its class's ``instances_tracked`` list,
which only moto's dashboard (``/moto-api/data.json``) and S3's reset read, and which nothing empties until a
reset. A long-running engine makes model instances for every request, for good: each Express execution's
copy of its state machine, every version of a DynamoDB item a write replaced (and the copies a Scan makes of
the whole table), every queue message. They stay reachable, so the process grows with every execution and
never gives the memory back, though AWS keeps nothing of an ended Express execution.

With the change, instances are tracked only for the classes S3's ``reset`` walks (its keys and multipart
uploads, whose buffers it closes); every other model lives as long as the backend holding it, as on AWS.
The dashboard then lists S3's models only: the engine does not serve it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Final

if TYPE_CHECKING:
    from idemflow.engine.patching import Patch

#: The classes whose instances moto still tracks: ``S3Backend.reset`` disposes of them through the list.
TRACKED: Final = frozenset({("moto.s3.models", "FakeKey"), ("moto.s3.models", "FakeMultipart")})


def install_untracked_models(patch: Patch) -> None:
    from moto.core.common_models import BaseModel

    def __new__(cls: Any, *args: Any, **kwargs: Any) -> Any:
        instance = object.__new__(cls)
        if (cls.__module__, cls.__name__) in TRACKED:
            cls.instances_tracked.append(instance)
        return instance

    patch.set(BaseModel, "__new__", __new__)
