"""brokerscope's configuration: the settings models of every part and the loader of the YAML file.

The ground floor of the house: it imports only pydantic, yaml and the table contracts
(lakehouse.tables), so every part above can take its settings from here.
"""

from settings.alerts import AlertsConfig
from settings.analysis import (
                               AnalysisSettings,
                               CauseSettings,
                               ClockSkewSettings,
                               IncidentSettings,
                               LagSettings,
                               RiskSettings,
                               StuckSettings,
)
from settings.base import SINCE_HELP, ConfigError, Duration, DurationOrZero, parse_duration, parse_since, since_option
from settings.config import CONFIG_HELP, Config, config_from_dict, config_warnings, load_config
from settings.dashboard import DashboardSettings
from settings.gc import GcSettings, GcThresholds
from settings.readiness import FailoverReadiness, KafkaCluster, Replication
from settings.service import ServiceSettings
from settings.targets import KINDS, HaSettings, Target, ZkOptions, ZkWatch

__all__ = [
    "AlertsConfig", "AnalysisSettings", "CauseSettings", "ClockSkewSettings", "IncidentSettings", "LagSettings",
    "RiskSettings", "StuckSettings", "Config", "ConfigError", "DashboardSettings", "Duration", "DurationOrZero",
    "FailoverReadiness", "GcSettings", "GcThresholds", "KafkaCluster", "Replication", "HaSettings", "KINDS", "ServiceSettings", "Target", "ZkOptions", "ZkWatch",
    "CONFIG_HELP", "config_from_dict", "config_warnings", "load_config", "parse_duration", "parse_since",
    "since_option", "SINCE_HELP",
]
