"""Artemis broker instances for the lab (see infra.artemis_lab)."""
