"""The only place that talks to the Kubernetes API: client configuration, list+watch caches,
event recording, leader election, patches; and the offline state file that stands in for it."""
