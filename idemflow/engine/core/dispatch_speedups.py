"""Cheaper request dispatch in moto 5.2.5: speedups, not fixes (the same handler found, less work).

``action-lookup``: BaseResponse.call_action looks the action up in
method_names_from_class(self.__class__), i.e. inspect.getmembers over the class's methods, on every
request. A class's methods do not change while it serves requests: the
list is kept per class.

``module-list-cache``: moto's HTTP dispatcher (``moto.moto_server.werkzeug_app``) lists its own package
directory (``os.listdir`` of ~150 folders) on every request to find a backend: the list is computed once.

``one-model-loader``: moto reads each service's model (to parse requests and shape responses) with a data loader
made for that one read, and a new loader first lists every service folder of botocore's data (some 400) to find
the model's newest version: an engine process listed them once per service it serves. One
loader lists them once and reads each model as before: moto's own loader class, with moto's extras.

``random-strings``: every response gets a request id of 52 random letters and digits
(``gen_amzn_requestid_long``), each drawn by ``Random.choice``, which calls ``_randbelow``, which calls
``getrandbits``: three calls a character. :meth:`MotoRandom.get_random_string <random_string>` draws each character
with ``getrandbits`` as ``_randbelow`` does (the same bits, the same rejections): the same string from the same
state of moto's random generator, which a test seeds (``/moto-api/seed``) to have known ids, and the same state
after it. Installed only where ``Random.choice`` draws that way (Python 3.11's ``_randbelow_with_getrandbits``).

``regions-data-loader``: each backend moto makes looks up the regions of its service in a botocore session of
moto's, whose loader reads the endpoints and the service's whole model again (the engine's clients had read them):
that session reads through the engine's process loader (:mod:`idemflow.engine.core.loaders`).

What each keeps is the process's, not an engine's: nothing in it changes while moto is imported (a class's
methods, moto's package folder, botocore's data), and an engine started again in the same process (a test suite
starts hundreds) would otherwise make it all again (a botocore session alone is some 20 ms of CPU).
"""

from __future__ import annotations

import functools
import random
import string
from typing import TYPE_CHECKING, Any, Final

if TYPE_CHECKING:
    from idemflow.engine.patching import Patch


@functools.cache
def _method_names(cls: type) -> tuple[str, ...]:
    from moto.core import utils

    return tuple(utils.method_names_from_class(cls))


def install_action_lookup(patch: Patch) -> None:
    from moto.core import responses, utils

    def method_names_from_class(clazz: object) -> list[str]:
        return list(_method_names(clazz)) if isinstance(clazz, type) else utils.method_names_from_class(clazz)

    patch.set(responses, "method_names_from_class", method_names_from_class)


@functools.cache
def _moto_modules() -> tuple[str, ...]:
    import moto.backends as moto_backends

    return tuple(moto_backends.list_of_moto_modules())  # read before the change replaces it


def install_module_list_cache(patch: Patch) -> None:
    import moto.backends as moto_backends

    _moto_modules()

    def list_of_moto_modules() -> Any:
        return iter(_moto_modules())

    # moto.moto_server.werkzeug_app calls it as backends.list_of_moto_modules(): changed there.
    patch.set(moto_backends, "list_of_moto_modules", list_of_moto_modules)


@functools.cache
def _shared_loader() -> Any:
    from moto.core.loaders import create_loader

    return create_loader()


def install_one_model_loader(patch: Patch) -> None:
    import moto.core.utils as moto_utils

    # moto.core.utils._load_service_model calls the name it imported: changed there. Each model is still read
    # once per process (get_service_model and get_pagination_model keep what it returns).
    patch.set(moto_utils, "create_loader", _shared_loader)


@functools.cache
def _regions_session() -> Any:
    import botocore.session

    from idemflow.engine.core import loaders

    return loaders.sharing_data(botocore.session.Session())


def install_regions_data_loader(patch: Patch) -> None:
    from moto.core.base_backend import AccountSpecificBackend

    # moto keeps one session for it (lru_cache) and reads nothing else with it: the regions of each backend.
    patch.set(AccountSpecificBackend, "get_session", classmethod(lambda cls: _regions_session()))


_POOLS: Final = {True: string.ascii_letters + string.digits, False: string.ascii_letters}
"""What moto's get_random_string draws from, with digits or without."""


def random_string(self: random.Random, length: int = 20, include_digits: bool = True, lower_case: bool = False) -> str:
    """moto 5.2.5's ``MotoRandom.get_random_string``, each ``self.choice(pool)`` spelled out as Python 3.11's
    ``Random.choice`` and ``_randbelow_with_getrandbits`` draw it."""
    pool = _POOLS[bool(include_digits)]
    n = len(pool)
    k = n.bit_length()
    getrandbits = self.getrandbits
    drawn = []
    for _ in range(length):
        r = getrandbits(k)
        while r >= n:
            r = getrandbits(k)
        drawn.append(pool[r])
    random_str = "".join(drawn)
    return random_str.lower() if lower_case else random_str


def install_random_strings(patch: Patch) -> None:
    from moto.moto_api._internal.moto_random import MotoRandom

    draws_as_python_3_11 = (
        MotoRandom.choice is random.Random.choice and MotoRandom._randbelow is random.Random._randbelow_with_getrandbits  # type: ignore[attr-defined]
    )
    if draws_as_python_3_11:
        patch.set(MotoRandom, "get_random_string", random_string)
