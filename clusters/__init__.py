"""Member clusters: the connector Protocol (`member`), real members over kubeconfig (`kube`)
and the standalone simulator (`sim`), which nothing else imports."""
