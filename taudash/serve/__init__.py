"""`taudash serve`: the headless service and its Prometheus exporter (the program layer owns
prometheus_client; the engine stays free of it)."""
