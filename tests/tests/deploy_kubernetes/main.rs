//! The Kubernetes recipes of `deploy/kubernetes/` (docs/deploy-kubernetes.md), checked without a
//! cluster:
//!
//! - `schema`: every manifest, and kustomize's rendering of every variant (`kubectl kustomize`, no
//!   cluster needed), passes `kubernetes-validate --strict`; the GPU overlay changes what it must
//!   and nothing else.
//! - `no_schema`: what kubernetes-validate has no schema for (the kustomizations, the
//!   ServiceMonitor custom resource, the Prometheus Adapter values), field by field.
//! - `crossref`: the objects agree with each other (selectors, ports, probe paths, the HPA's
//!   metric and the adapter's rule, the grace period and the server's drain, the bench Job and its
//!   script), and every pod runs locked down.
//! - `inference_pool`, `inference_pool_render`: the GAIE recipe (`inference-pool/`): the
//!   InferencePool, Gateway and HTTPRoute field by field, the pool selects the server pods on
//!   their port and names the endpoint picker's Service, the picker serves that pool with the
//!   pinned image and flags, its plugins read series the real server exports; the overlay
//!   renders base plus the router and validates.
//! - `run`: every variable the manifests set is one the programs read; the Deployment's real
//!   environment starts the real `pagoda-server`, whose probe paths answer 200; the bench Job's
//!   real script runs three clients against a real server and merges their parts.

mod crossref;
mod inference_pool;
mod inference_pool_render;
mod launch;
mod manifests;
mod no_schema;
mod run;
mod schema;
