# share/dmlps/launch/k8s-indexed-job.yaml, read with PyYAML (no cluster):
# an indexed Job of all its pods at once, each running dmlps-launch with the
# world size it has, under a headless Service that selects its pods and is
# their subdomain, on the port the server listens at. Then the binaries,
# given the variables Kubernetes and the manifest give a pod, find the server
# at the pod of index 0 under that Service, on that port.
# Skips (77) where /usr/bin/python3 lacks PyYAML (Debian's python3-yaml).
. "$(dirname "$0")/lib.sh"
src=${DMLPS_SOURCE_DIR:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}
manifest=$src/share/dmlps/launch/k8s-indexed-job.yaml
/usr/bin/python3 -c 'import yaml' 2>/dev/null ||
  { echo "SKIP: /usr/bin/python3 has no PyYAML (Debian's python3-yaml)"; exit 77; }

# Prints "JOB SERVICE PORT SIZE" when the manifest has the right shape, else
# fails with every problem found.
/usr/bin/python3 - "$manifest" >"$WORK/shape" 2>"$WORK/shape.log" <<'PY' || fail "the manifest's shape: $(cat "$WORK/shape.log")"
import os, sys, yaml

docs = [d for d in yaml.safe_load_all(open(sys.argv[1])) if d is not None]
problems = []
def check(ok, what):
    if not ok:
        problems.append(what)

kinds = sorted(d.get("kind", "?") for d in docs)
if kinds != ["Job", "Service"]:
    sys.exit(f"documents {kinds}, not one Job and one Service")
job = next(d for d in docs if d["kind"] == "Job")
svc = next(d for d in docs if d["kind"] == "Service")
check(job.get("apiVersion") == "batch/v1", "the Job is not batch/v1")
check(svc.get("apiVersion") == "v1", "the Service is not v1")
spec = job["spec"]
check(spec.get("completionMode") == "Indexed", "completionMode is not Indexed")
size = spec.get("completions")
check(isinstance(size, int) and size >= 2, f"completions {size!r}: not a server and a worker")
check(spec.get("parallelism") == size, "parallelism != completions: the server waits for all")
pod = spec["template"]["spec"]
labels = spec["template"]["metadata"].get("labels", {})
check(pod.get("restartPolicy") in ("Never", "OnFailure"), "restartPolicy must be Never or OnFailure")

check(svc["spec"].get("clusterIP") == "None", "the Service is not headless (clusterIP: None)")
selector = svc["spec"].get("selector", {})
check(bool(selector) and all(labels.get(k) == v for k, v in selector.items()),
      f"the Service's selector {selector} does not match the pods' labels {labels}")
check(pod.get("subdomain") == svc["metadata"]["name"],
      "the pods' subdomain is not the Service's name: pods would not resolve")

containers = pod.get("containers", [])
check(len(containers) == 1, "not one container")
c = containers[0]
command = c.get("command", []) + c.get("args", [])
check(bool(command) and os.path.basename(command[0]) == "dmlps-launch",
      "the container does not run dmlps-launch")
env = {e["name"]: e.get("value") for e in c.get("env", [])}
check(env.get("DMLPS_WORLD_SIZE") == str(size), "DMLPS_WORLD_SIZE != completions")
check(env.get("DMLPS_SERVICE") == svc["metadata"]["name"], "DMLPS_SERVICE is not the Service's name")
for name in ("JOB_COMPLETION_INDEX", "RANK", "WORLD_SIZE", "DMLPS_SERVER", "DMLPS_LAUNCHER"):
    check(name not in env, f"{name} is set: the pod's index must decide")
port = 5555
if "--port" in command:
    port = int(command[command.index("--port") + 1])
if "--server-args" in command or "--bind" in command:
    problems.append("the server's address is overridden: workers would not find it")
check(any(p.get("containerPort") == port for p in c.get("ports", [])),
      f"the container does not expose port {port}")
check(any(p.get("port") == port and p.get("targetPort", port) == port
          for p in svc["spec"].get("ports", [])), f"the Service does not carry port {port}")
if problems:
    sys.exit("; ".join(problems))
print(job["metadata"]["name"], svc["metadata"]["name"], port, size)
PY
read -r job service port size <"$WORK/shape"

# The pods' view: Kubernetes sets JOB_COMPLETION_INDEX and the hostname
# JOB-INDEX; the manifest DMLPS_WORLD_SIZE, DMLPS_SERVICE and (through
# dmlps-launch --port) DMLPS_PORT.
pod_env() {
  env -i PATH="$PATH" JOB_COMPLETION_INDEX="$1" HOSTNAME="$job-$1" DMLPS_WORLD_SIZE="$size" \
    DMLPS_SERVICE="$service" DMLPS_PORT="$port" "${@:2}"
}
last=$((size - 1))
pod_env "$last" "$BIN/dmlps-worker" --help >"$WORK/worker-help" 2>"$WORK/worker-help.log" ||
  fail "dmlps-worker --help failed in pod $last"
grep -qF "tcp://$job-0.$service:$port" "$WORK/worker-help" ||
  fail "a worker pod does not look for the server at $job-0.$service:$port"
pod_env 0 "$BIN/dmlps-server" --help >"$WORK/server-help" 2>"$WORK/server-help.log" ||
  fail "dmlps-server --help failed in pod 0"
awk '/--workers N/ { on = 1 } on { printf "%s ", $0 } on && /\(default:/ { exit }' \
  "$WORK/server-help" | grep -qF "(default: $last)" ||
  fail "the server pod does not count $last workers"
echo "$job: $size pods under the headless Service $service; workers look for tcp://$job-0.$service:$port"
