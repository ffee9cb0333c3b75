"""Embedded history: a per-cluster SQLite file the dashboard records into (recorder.py), kept within
bounds (retention.py) and read back by the CLI, the History screen and exporters (query.py)."""

from .db import DEMO_CLUSTER_KEY, HistoryError, NewerSchema, cluster_key, connect, db_path
from .queued import QueuedRecorder
from .reader import HistoryReader
from .recorder import Recorder, RecorderThread
from .retention import Retention
from .writer_lock import RecorderBusy

__all__ = ["DEMO_CLUSTER_KEY", "HistoryError", "HistoryReader", "NewerSchema", "QueuedRecorder", "Recorder",
           "RecorderBusy",
           "RecorderThread", "Retention", "cluster_key", "connect",
           "db_path"]
