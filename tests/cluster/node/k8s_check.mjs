// Offline checks of deploy/k8s (no cluster needed): what the issue asks of the manifests,
// and that they agree with tandem itself.
//
//   node tests/cluster/node/k8s_check.mjs OBJECTS.json TANDEM_BINARY MODEL.gguf
//
// OBJECTS.json: `kubectl kustomize deploy/k8s | kubectl label --local -f - -o json ...`
// (kubectl has parsed every object). The Deployment's `tandem serve` arguments are run for
// real (with a small model, on a free loopback port) to show tandem accepts them and serves
// the metric the HPA scales on.
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';

const [objectsFile, tandem, model] = process.argv.slice(2);
// kubectl prints one JSON document per object, one after the other (or a List).
function parseConcatenated(text) {
  const docs = [];
  let depth = 0, inString = false, escaped = false, start = -1;
  for (let i = 0; i < text.length; i++) {
    const ch = text[i];
    if (inString) {
      if (escaped) escaped = false;
      else if (ch === '\\') escaped = true;
      else if (ch === '"') inString = false;
    } else if (ch === '"') {
      inString = true;
    } else if (ch === '{') {
      if (depth++ === 0) start = i;
    } else if (ch === '}' && --depth === 0) {
      docs.push(JSON.parse(text.slice(start, i + 1)));
    }
  }
  return docs.flatMap((d) => (d.kind === 'List' ? d.items : [d]));
}
const objects = parseConcatenated(fs.readFileSync(objectsFile, 'utf8'));
const failures = [];
const check = (ok, what, detail = '') => {
  console.log(`${ok ? 'ok  ' : 'FAIL'} ${what}${ok || !detail ? '' : `: ${detail}`}`);
  if (!ok) failures.push(what);
  return ok;
};
const find = (kind) => objects.find((o) => o.kind === kind);
const dep = find('Deployment'), svc = find('Service'), hpa = find('HorizontalPodAutoscaler');
const adapter = objects.find((o) => o.kind === 'ConfigMap' && /adapter/.test(o.metadata.name));
check(dep && svc && hpa && adapter, 'a Deployment, a Service, an HPA and the adapter ConfigMap');
if (!(dep && svc && hpa && adapter)) process.exit(1);

const pod = dep.spec.template.spec;
const c = pod.containers[0];
const arg = (name) => {
  for (let i = 0; i < c.args.length; i++) {
    if (c.args[i] === name) return c.args[i + 1];
    if (c.args[i].startsWith(`${name}=`)) return c.args[i].slice(name.length + 1);
  }
  return undefined;
};
const probeOk = (p) => p?.httpGet?.path === '/health' && [8080, 'http'].includes(p.httpGet.port);
check(probeOk(c.readinessProbe), 'readiness probe: GET /health');
check(probeOk(c.livenessProbe), 'liveness probe: GET /health');
const grace = Number(arg('--shutdown-grace'));
const preStop = c.lifecycle?.preStop;
const preStopSeconds = preStop?.sleep?.seconds ??
  (preStop?.exec?.command?.[0] === 'sleep' ? Number(preStop.exec.command[1]) : NaN);
check(Number.isFinite(preStopSeconds) && preStopSeconds > 0, `preStop waits ${preStopSeconds} s`);
const tgps = pod.terminationGracePeriodSeconds;
check(grace > 0 && tgps >= preStopSeconds + grace && tgps <= preStopSeconds + grace + 30,
  `terminationGracePeriodSeconds ${tgps} covers preStop ${preStopSeconds} s + --shutdown-grace ${grace} s`);
const live = c.livenessProbe;
check(live.periodSeconds * live.failureThreshold > preStopSeconds + grace,
  'the liveness probe cannot kill a pod that is draining');
check(c.resources?.requests?.cpu && c.resources?.requests?.memory, 'CPU and memory requests');
check(String(c.resources.requests.cpu) === arg('--threads'), '--threads equals the CPU request');
const port = c.ports.find((p) => p.name === svc.spec.ports[0].targetPort || p.containerPort === svc.spec.ports[0].targetPort);
check(port && Number(arg('--port')) === port.containerPort, "the Service's targetPort is tandem's --port");
const labels = dep.spec.template.metadata.labels;
check(Object.entries(svc.spec.selector).every(([k, v]) => labels[k] === v), "the Service selects the Deployment's pods");
check(hpa.spec.scaleTargetRef.kind === 'Deployment' && hpa.spec.scaleTargetRef.name === dep.metadata.name,
  'the HPA scales the Deployment');
const metricName = hpa.spec.metrics[0]?.pods?.metric?.name;
check(adapter.data['config.yaml'].includes(`"${metricName}"`) && adapter.data['config.yaml'].includes(`'${metricName}{`),
  `the adapter rule exposes ${metricName}`);

// tandem accepts the Deployment's arguments and serves the HPA's metric as a gauge.
const args = c.args.filter((a) => !/^--(host|port|model)(=|$)/.test(a)).filter((a, i, all) =>
  !(i > 0 && /^--(host|port|model)$/.test(all[i - 1])));
const serve = spawn(tandem, [...args, '--model', model, '--host', '127.0.0.1', '--port', '0', '--kv-tokens', '1024'],
  { stdio: ['ignore', 'pipe', 'pipe'] });
let out = '';
serve.stdout.on('data', (d) => (out += d));
serve.stderr.on('data', (d) => (out += d));
const exited = new Promise((r) => serve.on('close', (code) => r(code)));
const timer = setTimeout(() => {
  check(false, 'tandem serve with the Deployment\'s arguments starts', out);
  serve.kill('SIGKILL');
}, 30000);
const listening = await new Promise((resolve) => {
  const tick = () => {
    const m = out.match(/listening on http:\/\/127\.0\.0\.1:(\d+)/);
    if (m) return resolve(Number(m[1]));
    if (serve.exitCode !== null) return resolve(0);
    setTimeout(tick, 20);
  };
  tick();
});
clearTimeout(timer);
if (check(listening > 0, `tandem ${args.join(' ')} starts`, out.trim())) {
  const metrics = await new Promise((resolve) => http.get({ host: '127.0.0.1', port: listening, path: '/metrics' }, (res) => {
    let b = '';
    res.on('data', (d) => (b += d));
    res.on('end', () => resolve(b));
  }).on('error', (e) => resolve(String(e))));
  check(new RegExp(`^# TYPE ${metricName} gauge$`, 'm').test(metrics), `tandem's /metrics has the gauge ${metricName}`);
  serve.kill('SIGTERM');
  check(await exited === 0, 'and exits 0 on SIGTERM');
}
process.exit(failures.length ? 1 : 0);
