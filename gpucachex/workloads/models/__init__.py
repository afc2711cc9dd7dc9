"""One module per benchmark kernel model; each defines MODEL, a `ModelSpec`, and the registry in
`gpucachex.workloads` lists them explicitly."""
