# Types of dmlps._dmlps, the compiled part of the dmlps package (python/src).
# The arguments of Worker and Evaluator are those of python/src/options.cc;
# tests/python/test_api.py checks that this file names the same ones, with
# the same defaults and types.
import os
from typing import Any, Callable, Sequence

import numpy as np
import numpy.typing as npt

__version__: str

# One exception per failure of the library; docs/your-model.md, "Errors".
class Error(Exception): ...
class InvalidArgumentError(Error, ValueError): ...
class ConfigError(Error, ValueError): ...
class DataLossError(Error, ValueError): ...
class NotFoundError(Error, FileNotFoundError): ...
class InputOutputError(Error, OSError): ...
class ServerError(Error, ConnectionError): ...
class UnavailableError(ServerError, TimeoutError): ...
class ServerLostError(ServerError): ...
class RefusedError(ServerError): ...
class ProtocolError(ServerError): ...
class InternalError(Error, RuntimeError): ...

def set_log_level(level: str) -> None: ...

class Worker:
    def __init__(
        self,
        server: str,
        num_samples: int,
        compute: Callable[[npt.NDArray[np.float32], npt.NDArray[np.int64], npt.NDArray[np.float32]], float],
        num_params: int = -1,
        on_join: Callable[[dict[str, Any]], int | None] | None = None,
        layout: Sequence[tuple[str, Sequence[int]] | tuple[str, Sequence[int], bool]] | None = None,
        initial_values: npt.ArrayLike | None = None,
        local_step: Callable[[npt.NDArray[np.float32], npt.NDArray[np.float32]], object] | None = None,
        *,
        rank: int = -1,
        connect_timeout_ms: int = 10000,
        server_timeout_ms: int = 30000,
        heartbeat_ms: int = 1000,
        curve_secret: str | os.PathLike[str] | None = None,
        curve_server_key: str | os.PathLike[str] | None = None,
        secret: str | os.PathLike[str] | None = None,
        reconnect_timeout_ms: int = 30000,
        threads: int = 1,
        max_batch: int = 0,
        slowdown: float = 1.0,
        slowdown_schedule: str | None = None,
        delay_ms: int = 0,
        delay_prob: float = 0.0,
        round_robin_ms: int = 0,
        bandwidth_mbps: float = 0.0,
        bandwidth_schedule: str | None = None,
        seed: int = 0,
        trace: str | os.PathLike[str] | None = None,
    ) -> None: ...
    def run(self) -> dict[str, Any]: ...
    def stop(self) -> None: ...

class Evaluator:
    def __init__(
        self,
        server: str,
        evaluate: Callable[[npt.NDArray[np.float32]], tuple[float, float]],
        on_join: Callable[[str, int], object] | None = None,
        *,
        connect_timeout_ms: int = 10000,
        server_timeout_ms: int = 30000,
        heartbeat_ms: int = 1000,
        curve_secret: str | os.PathLike[str] | None = None,
        curve_server_key: str | os.PathLike[str] | None = None,
        secret: str | os.PathLike[str] | None = None,
    ) -> None: ...
    def run(self) -> dict[str, Any]: ...
    def stop(self) -> None: ...

def load_train(
    data: str = "fashion-mnist", shard_index: int = 0, shard_count: int = 1
) -> tuple[npt.NDArray[np.float32], npt.NDArray[np.int64]]: ...
def load_test(data: str = "fashion-mnist") -> tuple[npt.NDArray[np.float32], npt.NDArray[np.int64]]: ...
def model_loss_and_gradient(
    model: str, params: npt.ArrayLike, x: npt.ArrayLike, y: npt.ArrayLike, classes: int
) -> tuple[float, npt.NDArray[np.float32]]: ...
def model_initialize(model: str, input_dim: int, classes: int, seed: int = 0) -> npt.NDArray[np.float32]: ...
def write_initial(
    path: str,
    layout: Sequence[tuple[str, Sequence[int]] | tuple[str, Sequence[int], bool]],
    values: npt.ArrayLike,
) -> None: ...
def read_checkpoint(path: str) -> dict[str, Any]: ...
