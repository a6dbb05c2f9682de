"""End-to-end tests inside the real clients, against scripted model servers on 127.0.0.1."""
