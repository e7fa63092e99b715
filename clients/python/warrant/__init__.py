# SPDX-License-Identifier: BSD-2-Clause
"""warrant: the decider's library for warrantd (warrantd(7) §2-§3).

    from warrant import Decider
    d = Decider("/etc/warrantd/warrantd.ini", key_file="decider.key", kid="k1")
    rid = d.decide("operator:4417", "gate.open", "gates/7", {"duration_s": 30},
                   "ticket:CHG-1182", expires_at=timedelta(hours=14))
"""

from .client import Decider, Keys, fnv1a32, shard_of
from .config import Settings, load as load_config
from .errors import (ConfigError, KeyFileError, NotPermittedError, RecordError,
                     RecordExistsError, UnknownActionError, WaitTimeout, WarrantError)
from .jws import Signer
from .record import Policy, TERMINAL, new_id

__version__ = "0.1.0"
__all__ = ["Decider", "Keys", "fnv1a32", "shard_of", "Settings", "load_config", "ConfigError",
           "KeyFileError", "NotPermittedError", "RecordError", "RecordExistsError",
           "UnknownActionError", "WaitTimeout", "WarrantError", "Signer", "Policy", "TERMINAL",
           "new_id"]
