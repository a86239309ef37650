// tests/js/contract.mjs - the API's contract: every operation of
// api/openapi.json sent to a running API, each answer held to the document.
//
//   node tests/js/contract.mjs
//
// Environment: CONTRACT_URL (the API, https://127.0.0.1:PORT), CONTRACT_TOKEN
// (a platform admin's token), CONTRACT_CA (the stack's CA certificate),
// CONTRACT_DOC (the document, default api/openapi.json), CONTRACT_CODE_TAR (a
// tar archive holding run.sh, for the code bundle routes), CONTRACT_SUFFIX
// (appended to the names this run creates), CONTRACT_BODY_LIMIT (the API's
// TRAINYARD_BODY_LIMIT, default 1048576), CONTRACT_SEAL and
// CONTRACT_STORAGE_ROOT (tests/integration/tool_seal and the API's storage
// root: the attempt writes its sealed log and checkpoint there, as the worker
// runtime would, so that the download routes have files to send).
//
// For every operation (path x method) it sends a valid request, built from
// the operation's documented parameters and request body schema with the
// resources the run creates beforehand (tenants, a user and its token,
// datasets, a code bundle, jobs, attempts, checkpoints, grants, a webhook, a
// priority class), and bad ones, first: no token (on a route that needs
// one), a body that is not JSON (text/plain) and one over the body limit
// (an upload's announced with Expect: 100-continue, never sent), and on a
// route that is not a GET, a malformed JSON body ([1,2). A route that
// changes or removes a resource gets its bad requests on a second one, so
// that a bad request acted on shows. Each answer:
//   - its status is one the operation documents;
//   - its Content-Type is one documented for that status, and its body
//     validates against that media type's schema (JSON Schema 2020-12, the
//     dialect of OpenAPI 3.1, with ajv as openapi-backend compiles it); a
//     status documented without content has an empty body;
//   - its documented headers validate (Retry-After an integer ...);
//   - a problem (application/problem+json) has a `code` from the
//     document's list, `type` urn:trainyard:error:<code>, `status` the
//     answer's status, `request_id` the X-Request-Id header, and the bad
//     requests the code each deserves (invalid_json, unsupported_media_type,
//     body_too_large, unauthenticated);
//   - every timestamp in a JSON body (a string that starts like an RFC 3339
//     date-time) is UTC with milliseconds, 2026-12-02T15:04:05.123Z.
// The valid request itself is checked against the document with
// openapi-backend's request validator, so that what is sent is what the
// document describes, and must answer a 2xx status. Beside the operations:
// a method a path does not have answers 405 with an Allow header naming the
// path's methods, HEAD on every GET route answers as GET with no body, and
// every operation lists 400, 413, 415 and 500 (and 401 and 429 when it needs
// a token), the statuses any route may answer.
//
// Prints "ok - ..." / "not ok - ..." lines (one failure a line), "note - ..."
// for what could not be exercised and why, then a tally; exits 1 on any
// failure.

import fs from 'node:fs';
import https from 'node:https';
import http from 'node:http';
import crypto from 'node:crypto';
import { spawnSync } from 'node:child_process';
import OpenAPIBackend from 'openapi-backend';
import Ajv2020 from 'ajv/dist/2020.js';
import addFormats from 'ajv-formats';

const env = (name, dflt) => {
	const v = process.env[name] ?? dflt;
	if (v === undefined) {
		console.log(`not ok - environment: ${name} is not set`);
		process.exit(1);
	}
	return v;
};
const BASE = new URL(env('CONTRACT_URL'));
const ADMIN = env('CONTRACT_TOKEN');
const CA = process.env.CONTRACT_CA ? fs.readFileSync(process.env.CONTRACT_CA) : undefined;
const DOC_PATH = env('CONTRACT_DOC', new URL('../../api/openapi.json', import.meta.url).pathname);
const CODE_TAR = process.env.CONTRACT_CODE_TAR;
const SFX = env('CONTRACT_SUFFIX', String(process.pid));
const SEAL = process.env.CONTRACT_SEAL, STORAGE_ROOT = process.env.CONTRACT_STORAGE_ROOT;
// The run's requests leave from a loopback address of their own
// (CONTRACT_CLIENT_ADDR, default 127.0.0.77 when the API is on 127.0.0.1):
// the API counts and audits failed authentications per client address, and
// the many this run makes on purpose must not share a window, or a rate
// limit, with those of the other tests.
const CLIENT_ADDR = process.env.CONTRACT_CLIENT_ADDR ?? (/^127\.\d+\.\d+\.\d+$/.test(BASE.hostname) ? '127.0.0.77' : '');
if (!/^(127\.\d+\.\d+\.\d+|localhost|\[::1\])$/.test(BASE.hostname)) {
	console.log(`not ok - environment: CONTRACT_URL must be on loopback, not ${BASE.hostname}`);
	process.exit(1);
}

const doc = JSON.parse(fs.readFileSync(DOC_PATH, 'utf8'));
const METHODS = ['get', 'put', 'post', 'delete', 'patch', 'head', 'options', 'trace'];

// ---- the validators -------------------------------------------------------

const newAjv = (opts = {}) => {
	const ajv = new Ajv2020({ strict: false, allErrors: true, validateFormats: true, ...opts });
	addFormats(ajv);
	// OpenAPI's own formats, which JSON Schema leaves open
	ajv.addFormat('int32', { type: 'number', validate: (n) => Number.isInteger(n) && n >= -(2 ** 31) && n < 2 ** 31 });
	ajv.addFormat('int64', { type: 'number', validate: (n) => Number.isInteger(n) });
	ajv.addFormat('float', { type: 'number', validate: () => true });
	ajv.addFormat('double', { type: 'number', validate: () => true });
	return ajv;
};
// Schemas are compiled against the document itself, so that their $refs
// resolve where they were written.
const ajv = newAjv();
ajv.addSchema(doc, 'openapi.json');
const compiled = new Map();
function validatorAt(pointer) {
	if (!compiled.has(pointer)) compiled.set(pointer, ajv.compile({ $ref: `openapi.json#${pointer}` }));
	return compiled.get(pointer);
}
const esc = (s) => s.replace(/~/g, '~0').replace(/\//g, '~1');

// openapi-backend checks that each valid request is one the document allows.
const backend = new OpenAPIBackend({
	definition: structuredClone(doc),
	strict: false,
	// quick: no check of the document against OpenAPI 3.0's schema (this one is
	// 3.1, which Spectral lints below), and validators compiled when first used
	quick: true,
	validate: true,
	customizeAjv: (_orig, opts) => newAjv({ ...opts, strict: false }),
});
await backend.init();

// resolve a $ref of the document, following chains; returns [object, pointer]
function deref(obj, pointer) {
	let seen = 0;
	while (obj && obj.$ref && seen++ < 20) {
		pointer = obj.$ref.replace(/^#/, '');
		obj = pointer.split('/').slice(1).reduce((o, k) => o?.[k.replace(/~1/g, '/').replace(/~0/g, '~')], doc);
	}
	return [obj, pointer];
}

// ---- the operations -------------------------------------------------------

const ops = new Map(); // operationId -> {method, path, op, pointer, params}
for (const [path, item] of Object.entries(doc.paths)) {
	for (const method of METHODS) {
		if (!item[method]) continue;
		const op = item[method];
		const params = new Map();
		for (const p of [...(item.parameters || []), ...(op.parameters || [])]) {
			const [pp] = deref(p, '');
			params.set(`${pp.in}:${pp.name}`, pp);
		}
		ops.set(op.operationId, {
			id: op.operationId, method: method.toUpperCase(), path, op, params: [...params.values()],
			pointer: `/paths/${esc(path)}/${method}`,
			public: Array.isArray(op.security) && op.security.length === 0 ||
				Array.isArray(op.security) && op.security.every((s) => Object.keys(s).length === 0),
		});
	}
}

// ---- the tally ------------------------------------------------------------

let passed = 0, failed = 0, notes = 0;
const perOp = new Map(); // operationId -> {ok, bad}
const ok = (desc) => { passed++; console.log(`ok - ${desc}`); };
const notOk = (desc) => { failed++; console.log(`not ok - ${desc.replace(/\s*\n\s*/g, ' ')}`); };
const note = (desc) => { notes++; console.log(`note - ${desc.replace(/\s*\n\s*/g, ' ')}`); };
const tallyOp = (id, good) => {
	const t = perOp.get(id) || { ok: 0, bad: 0 };
	good ? t.ok++ : t.bad++;
	perOp.set(id, t);
};

// ---- HTTP -----------------------------------------------------------------

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

// send one request; resolves {status, headers, body (Buffer), error}
function sendOnce({ method, path, headers = {}, body, expectContinue = false }) {
	// a body always framed by Content-Length (Node sends a DELETE's unframed)
	if (body !== undefined && !Object.keys(headers).some((k) => k.toLowerCase() === 'content-length'))
		headers = { ...headers, 'Content-Length': String(Buffer.byteLength(body)) };
	return new Promise((resolve) => {
		const url = new URL(path, BASE);
		const mod = url.protocol === 'https:' ? https : http;
		let done = false;
		const finish = (r) => { if (!done) { done = true; resolve(r); } };
		const opts = { method, headers, ca: CA, agent: false, timeout: 30000, ...(CLIENT_ADDR ? { localAddress: CLIENT_ADDR } : {}) };
		const req = mod.request(url, opts, (res) => {
			const chunks = [];
			res.on('data', (c) => chunks.push(c));
			res.on('end', () => finish({ status: res.statusCode, headers: res.headers, body: Buffer.concat(chunks) }));
			res.on('error', (e) => finish({ status: res.statusCode, headers: res.headers, body: Buffer.concat(chunks), error: String(e) }));
		});
		req.on('timeout', () => { req.destroy(new Error('timed out')); });
		req.on('error', (e) => finish({ status: 0, headers: {}, body: Buffer.alloc(0), error: String(e) }));
		if (expectContinue) {
			// the body is announced, never sent: the answer must come first
			req.on('continue', () => { req.destroy(); finish({ status: 0, headers: {}, body: Buffer.alloc(0), error: 'the server asked for the body (100 Continue)' }); });
			req.flushHeaders();
			return;
		}
		if (body !== undefined) req.end(body); else req.end();
	});
}

// send, waiting out a 429 (a documented answer, checked like any other)
async function send(r, check) {
	for (let i = 0; ; i++) {
		const res = await sendOnce(r);
		if (res.status !== 429 || i >= 8) return res;
		if (check) check(res);
		const wait = Math.min(Number(res.headers['retry-after']) || 1, 5);
		await sleep(wait * 1000);
	}
}

// ---- checking an answer ---------------------------------------------------

const TS_LIKE = /^\d{4}-\d{2}-\d{2}[Tt ]\d{2}:\d{2}/;
const TS_MS = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;
function timestampsWithoutMs(value, at = '', out = []) {
	if (typeof value === 'string') {
		if (TS_LIKE.test(value) && !TS_MS.test(value)) out.push(`${at || '/'}=${value}`);
	} else if (Array.isArray(value)) {
		value.forEach((v, i) => timestampsWithoutMs(v, `${at}/${i}`, out));
	} else if (value && typeof value === 'object') {
		for (const [k, v] of Object.entries(value)) timestampsWithoutMs(v, `${at}/${esc(k)}`, out);
	}
	return out;
}
const mediaType = (ct) => (ct || '').split(';')[0].trim().toLowerCase();
const isJsonType = (mt) => mt === 'application/json' || mt.endsWith('+json');
// ajv's errors, one line (a failed oneOf lists the errors of every branch)
function fmtErrors(errs) {
	const out = [...new Set((errs || []).map((e) => `${e.instancePath || '/'} ${e.message}${e.params?.additionalProperty ? ` (${e.params.additionalProperty})` : ''}${e.params?.allowedValues ? ` ${JSON.stringify(e.params.allowedValues)}` : ''}`))];
	return out.slice(0, 8).join('; ') + (out.length > 8 ? ` (and ${out.length - 8} more)` : '');
}

// why VALUE fails the schema at POINTER, as ajv's errors: within a oneOf only
// those of the branch it comes closest to (the fewest errors), so that a job
// of one kind is not also told every rule of the other
function explain(pointer, value, at = '', depth = 0) {
	const validate = validatorAt(pointer);
	if (validate(value)) return [];
	const errs = () => validate.errors.map((e) => ({ ...e, instancePath: at + e.instancePath }));
	if (depth > 12) return errs();
	const [schema, sp] = deref(pointer.split('/').slice(1).reduce((o, k) => o?.[k.replace(/~1/g, '/').replace(/~0/g, '~')], doc), pointer);
	if (!schema || typeof schema !== 'object') return errs();
	if (Array.isArray(schema.oneOf)) {
		const tries = schema.oneOf.map((_, i) => explain(`${sp}/oneOf/${i}`, value, at, depth + 1));
		return tries.reduce((best, t) => (t.length < best.length ? t : best));
	}
	const out = [];
	for (const [i] of (schema.allOf || []).entries()) out.push(...explain(`${sp}/allOf/${i}`, value, at, depth + 1));
	if (value && typeof value === 'object' && !Array.isArray(value) && schema.properties) {
		for (const k of Object.keys(schema.properties))
			if (k in value) out.push(...explain(`${sp}/properties/${esc(k)}`, value[k], `${at}/${esc(k)}`, depth + 1));
	}
	// what the members do not account for (required, additionalProperties ...)
	const own = errs().filter((e) => e.instancePath === at && !['oneOf', 'allOf', 'anyOf'].includes(e.keyword));
	const merged = out.concat(own);
	return merged.length ? merged : errs();
}

// problems with one answer of operation o, as strings ([] when it holds)
function answerProblems(o, res, { head = false } = {}) {
	const probs = [];
	if (!res.status) return [`no answer: ${res.error}`];
	const status = String(res.status);
	const responses = o.op.responses || {};
	let key = status in responses ? status : `${status[0]}XX` in responses ? `${status[0]}XX` : 'default' in responses ? 'default' : null;
	if (!key) {
		probs.push(`status ${status} is not documented (documented: ${Object.keys(responses).join(' ')})`);
		return probs.concat(problemShape(res, null));
	}
	const [resp, rpointer] = deref(responses[key], `${o.pointer}/responses/${key}`);
	// documented headers
	for (const [name, h0] of Object.entries(resp.headers || {})) {
		const [h, hp] = deref(h0, `${rpointer}/headers/${esc(name)}`);
		const v = res.headers[name.toLowerCase()];
		if (v === undefined) {
			if (h.required) probs.push(`header ${name} is required and missing`);
			continue;
		}
		if (h.schema) {
			const [hs] = deref(h.schema, '');
			let val = v;
			if (hs && (hs.type === 'integer' || hs.type === 'number')) val = /^-?\d+(\.\d+)?$/.test(v) ? Number(v) : v;
			const validate = validatorAt(`${hp}/schema`);
			if (!validate(val)) probs.push(`header ${name}: ${JSON.stringify(v)} ${fmtErrors(validate.errors)}`);
		}
	}
	const content = resp.content || {};
	const ct = res.headers['content-type'];
	if (Object.keys(content).length === 0) {
		if (res.body.length > 0) probs.push(`status ${status} is documented without a body, got ${res.body.length} bytes (${ct || 'no Content-Type'})`);
		return probs;
	}
	let media = ct && (Object.keys(content).find((k) => k.toLowerCase() === ct.toLowerCase()) ||
		Object.keys(content).find((k) => mediaType(k) === mediaType(ct)));
	if (!media) {
		probs.push(`Content-Type ${ct || '(none)'} is not documented for ${status} (documented: ${Object.keys(content).join(', ')})`);
		return probs;
	}
	if (head) {
		if (res.body.length > 0) probs.push(`HEAD answered a body of ${res.body.length} bytes`);
		return probs;
	}
	const mt = mediaType(media);
	const schemaPointer = `${rpointer}/content/${esc(media)}/schema`;
	const schemaDoc = content[media].schema;
	if (isJsonType(mt)) {
		let value;
		try {
			value = JSON.parse(res.body.toString('utf8'));
		} catch (e) {
			probs.push(`body is not JSON (${mt}): ${res.body.toString('utf8').slice(0, 80)}`);
			return probs;
		}
		if (schemaDoc) {
			const why = explain(schemaPointer, value);
			if (why.length) probs.push(`body does not match the ${status} schema: ${fmtErrors(why)}`);
		}
		const bad = timestampsWithoutMs(value);
		if (bad.length) probs.push(`timestamps without milliseconds: ${bad.slice(0, 3).join(', ')}`);
		if (mt === 'application/problem+json') probs.push(...problemShape(res, value));
	} else if (mt === 'application/jsonl' || mt === 'application/x-ndjson') {
		const lines = res.body.toString('utf8').split('\n').filter((l) => l.length);
		for (const [i, l] of lines.entries()) {
			let v;
			// each line JSON; no rule for its timestamps: the audit log's
			// entries carry microseconds, hashed as exported (docs/audit.md)
			try { JSON.parse(l); } catch { probs.push(`line ${i + 1} of the ${mt} body is not JSON`); break; }
		}
	} else if (schemaDoc) {
		const [s] = deref(schemaDoc, '');
		if (s?.type === 'string' && s.format !== 'binary' && !s.contentEncoding) {
			const validate = validatorAt(schemaPointer);
			if (!validate(res.body.toString('utf8'))) probs.push(`body does not match the ${status} schema: ${fmtErrors(validate.errors)}`);
		}
	}
	return probs;
}

// the rules every problem body follows, documented or not
function problemShape(res, value) {
	const probs = [];
	if (res.status < 400) return probs;
	const mt = mediaType(res.headers['content-type']);
	if (value === null) {
		if (mt !== 'application/problem+json') return [`a ${res.status} answer as ${mt || '(no Content-Type)'}, not application/problem+json`];
		try { value = JSON.parse(res.body.toString('utf8')); } catch { return ['problem body is not JSON']; }
		const validate = validatorAt('/components/schemas/Problem');
		if (!validate(value)) probs.push(`problem body does not match Problem: ${fmtErrors(validate.errors)}`);
	}
	if (typeof value?.code !== 'string') return probs.concat('problem without a code');
	if (value.type !== `urn:trainyard:error:${value.code}`) probs.push(`problem type ${value.type} is not urn:trainyard:error:${value.code}`);
	if (value.status !== res.status) probs.push(`problem status ${value.status} is not the answer's ${res.status}`);
	if (res.headers['x-request-id'] !== undefined && value.request_id !== res.headers['x-request-id'])
		probs.push(`problem request_id ${value.request_id} is not the X-Request-Id header ${res.headers['x-request-id']}`);
	return probs;
}
const problemCode = (res) => {
	if (mediaType(res.headers['content-type']) !== 'application/problem+json') return undefined;
	try { return JSON.parse(res.body.toString('utf8')).code; } catch { return undefined; }
};

// ---- requests -------------------------------------------------------------

const ctx = {}; // the resources the run creates
const auth = (token) => (token ? { Authorization: `Bearer ${token}` } : {});

function fillPath(o, pathParams) {
	return o.path.replace(/\{([^}]+)\}/g, (_, name) => {
		const v = pathParams[name];
		if (v === undefined || v === null) throw new Error(`no value for path parameter ${name}`);
		return encodeURIComponent(String(v));
	});
}
const qs = (query) => {
	const s = new URLSearchParams(Object.entries(query || {}).filter(([, v]) => v !== undefined).map(([k, v]) => [k, String(v)])).toString();
	return s ? `?${s}` : '';
};

// call OP: the valid request of an operation. spec: {path: {...}, query,
// body (object or Buffer), type, token ('admin' default, a token, or null),
// headers, expect (a list of statuses; default any 2xx), label}
async function call(id, spec = {}) {
	const o = ops.get(id);
	if (!o) { notOk(`${id}: the test names an operation the document does not have`); return null; }
	const label = `${o.method} ${o.path}${spec.label ? ` (${spec.label})` : ''}`;
	let path;
	try {
		path = fillPath(o, spec.path || {}) + qs(spec.query);
	} catch (e) {
		// a resource it needs was not made: said once at the end, with why
		if (!unexercised.has(o.id)) unexercised.set(o.id, `${label}: ${e.message} (its creation failed above)`);
		return null;
	}
	const token = spec.token === undefined ? ADMIN : spec.token;
	const headers = { ...auth(token), ...(spec.headers || {}) };
	let body;
	if (spec.body !== undefined) {
		if (Buffer.isBuffer(spec.body) || typeof spec.body === 'string') {
			body = Buffer.from(spec.body);
			headers['Content-Type'] = spec.type || 'application/octet-stream';
		} else {
			body = Buffer.from(JSON.stringify(spec.body));
			headers['Content-Type'] = spec.type || 'application/json';
		}
	}
	// the request is one the document allows
	if (!spec.noRequestCheck) {
		const url = new URL(path, BASE);
		const query = Object.fromEntries(url.searchParams.entries());
		const lower = Object.fromEntries(Object.entries(headers).map(([k, v]) => [k.toLowerCase(), v]));
		let parsed = spec.body;
		if (body && (headers['Content-Type'] || '').includes('json')) parsed = JSON.parse(body.toString());
		const v = backend.validateRequest({ method: o.method.toLowerCase(), path: url.pathname, query, headers: lower, body: parsed }, o.id);
		if (!v.valid) {
			const msg = (v.errors || []).slice(0, 3).map((e) => `${e.instancePath || '/'} ${e.message}`).join('; ');
			notOk(`${o.id} ${label}: the valid request does not match the document: ${msg}`);
			tallyOp(o.id, false);
		}
	}
	// the bad requests first, so that one acted on shows (on another
	// resource than the valid request's where that one must stay usable)
	let actedOn = false;
	if (!spec.noBad) {
		let badPath = path;
		if (spec.badOn) badPath = fillPath(o, { ...(spec.path || {}), ...spec.badOn }) + qs(spec.query);
		actedOn = await badRequests(o, badPath, spec, label);
	}
	const requestId = `contract-${++requestSeq}`;
	headers['X-Request-Id'] = requestId;
	const res = await send({ method: o.method, path, headers, body }, (r429) => checkAnswer(o, `${label} [429]`, r429));
	const probs = answerProblems(o, res);
	if (res.status && res.headers['x-request-id'] !== requestId)
		probs.push(`X-Request-Id ${res.headers['x-request-id']} is not the request's ${requestId}`);
	const want = spec.expect;
	const good = want ? want.includes(res.status) : res.status >= 200 && res.status < 300;
	if (!good && actedOn && probs.length === 0) {
		cascaded.add(o.id);
		note(`${o.id} ${label}: the valid request answered ${res.status}${problemCode(res) ? ` ${problemCode(res)}` : ''} after a bad request was acted on (above)`);
	} else if (!good) probs.unshift(`expected ${want ? want.join(' or ') : 'a 2xx status'}, got ${res.status}${problemCode(res) ? ` ${problemCode(res)}` : ''}`);
	if (probs.length) {
		notOk(`${o.id} ${label}: ${res.status}: ${probs.join('; ')}`);
		tallyOp(o.id, false);
	} else {
		ok(`${o.id} ${label}: ${res.status}`);
		tallyOp(o.id, true);
	}
	res.json = () => { try { return JSON.parse(res.body.toString('utf8')); } catch { return {}; } };
	res.valid = good;
	exercised.add(o.id);
	if (good) succeeded.add(o.id);
	if (o.method === 'GET' && !spec.noHead) await headCheck(o, path, headers, res, label);
	return res;
}
let requestSeq = 0;
const exercised = new Set(), succeeded = new Set(), badDone = new Set(), cascaded = new Set();
const unexercised = new Map(); // operationId -> why no request was sent

function checkAnswer(o, label, res, extra = []) {
	const probs = answerProblems(o, res).concat(extra);
	if (probs.length) { notOk(`${o.id} ${label}: ${res.status}: ${probs.join('; ')}`); tallyOp(o.id, false); }
	else { ok(`${o.id} ${label}: ${res.status}`); tallyOp(o.id, true); }
}

// HEAD on a GET route answers as the GET did, without a body
async function headCheck(o, path, headers, getRes, label) {
	const res = await send({ method: 'HEAD', path, headers });
	const probs = [];
	if (res.status !== getRes.status) probs.push(`HEAD answered ${res.status}${problemCode(res) ? ` ${problemCode(res)}` : ''}, GET ${getRes.status}`);
	else {
		probs.push(...answerProblems(o, res, { head: true }));
		if (mediaType(res.headers['content-type']) !== mediaType(getRes.headers['content-type']))
			probs.push(`HEAD Content-Type ${res.headers['content-type']} is not GET's ${getRes.headers['content-type']}`);
	}
	if (res.body.length > 0 && !probs.some((p) => p.includes('HEAD answered a body'))) probs.push(`HEAD answered a body of ${res.body.length} bytes`);
	if (probs.length) { notOk(`${o.id} HEAD ${label.replace(/^GET /, '')}: ${probs.join('; ')}`); tallyOp(o.id, false); }
	else { ok(`${o.id} HEAD ${label.replace(/^GET /, '')}: ${res.status}, as GET`); tallyOp(o.id, true); }
}

const BODY_LIMIT = Number(process.env.CONTRACT_BODY_LIMIT || 1048576);

// the bad requests of an operation, once per operation
async function badRequests(o, path, spec, label) {
	if (badDone.has(o.id)) return false;
	badDone.add(o.id);
	let actedOn = false;
	const token = spec.token === undefined ? ADMIN : spec.token;
	const base = label.replace(/ \(.*\)$/, '');
	// wants: [[status, code], ...], the answers the bad request may have
	const expectCode = async (what, req, ...wants) => {
		const res = await send(req, (r429) => checkAnswer(o, `${base} [${what}, 429]`, r429));
		const probs = answerProblems(o, res);
		const code = problemCode(res);
		if (res.status >= 200 && res.status < 300) actedOn = true;
		if (!wants.some(([st, c]) => res.status === st && code === c))
			probs.unshift(`expected ${wants.map(([st, c]) => `${st} ${c}`).join(' or ')}, got ${res.status}${code ? ` ${code}` : ''}`);
		if (probs.length) { notOk(`${o.id} ${base} [${what}]: ${res.status}: ${probs.join('; ')}`); tallyOp(o.id, false); }
		else { ok(`${o.id} ${base} [${what}]: ${res.status} ${code}`); tallyOp(o.id, true); }
	};
	if (!o.public && token) {
		const headers = { ...(spec.headers || {}) };
		await expectCode('no token', { method: o.method, path, headers }, [401, 'unauthenticated']);
	}
	if (o.method === 'HEAD' || (!token && !o.public)) return actedOn;
	const h = { ...auth(token), ...(spec.headers || {}) };
	const big = Buffer.alloc(BODY_LIMIT + 1024, 0x20);
	big[0] = 0x7b; big[big.length - 1] = 0x7d; // { ... }
	if (o.method === 'GET') {
		// a GET's body means nothing, but the API refuses a malformed one, the
		// wrong media type and the oversized on every route, before it reads a
		// GET's query
		await expectCode('malformed JSON [1,2', { method: o.method, path, headers: { ...h, 'Content-Type': 'application/json' }, body: '[1,2' }, [400, 'invalid_json']);
		await expectCode('text/plain body', { method: o.method, path, headers: { ...h, 'Content-Type': 'text/plain' }, body: 'hello' }, [415, 'unsupported_media_type']);
		await expectCode('body over the limit', { method: o.method, path, headers: { ...h, 'Content-Type': 'application/json' }, body: big }, [413, 'body_too_large']);
		return actedOn;
	}
	const upload = o.op.requestBody && !o.op.requestBody.content?.['application/json'];
	if (upload) {
		// an upload takes its own media types, and JSON is not one of them
		await expectCode('application/json body', { method: o.method, path, headers: { ...h, 'Content-Type': 'application/json' }, body: '{}' }, [415, 'unsupported_media_type']);
		await expectCode('body announced past every limit', { method: o.method, path, headers: { ...h, 'Content-Type': spec.type, 'Content-Length': String(2 ** 50), Expect: '100-continue' }, expectContinue: true }, [413, 'body_too_large']);
		return actedOn;
	}
	await expectCode('malformed JSON [1,2', { method: o.method, path, headers: { ...h, 'Content-Type': 'application/json' }, body: '[1,2' }, [400, 'invalid_json']);
	await expectCode('text/plain body', { method: o.method, path, headers: { ...h, 'Content-Type': 'text/plain' }, body: 'hello' }, [415, 'unsupported_media_type']);
	await expectCode('body over the limit', { method: o.method, path, headers: { ...h, 'Content-Type': 'application/json' }, body: big }, [413, 'body_too_large']);
	return actedOn;
}

// ---- the run --------------------------------------------------------------

const sha = (s) => crypto.createHash('sha256').update(s).digest('hex');
const inDays = (d) => new Date(Date.now() + d * 86400e3).toISOString();
const tiny = (name, extra = {}) => ({
	name, model: { preset: 'tiny' },
	parallel: { data_parallel: 1, micro_batch: 4, global_batch: 8 },
	resources: { nodes: 1, ranks_per_node: 1, time_limit_minutes: 30 },
	training: { steps: 10 }, ...extra,
});
const idOf = (res, field = 'id') => (res && res.valid ? res.json()[field] : undefined);

const TA = `ct-a-${SFX}`, TB = `ct-b-${SFX}`, TC = `ct-c-${SFX}`, USER = `ct-u-${SFX}`, OWNER = `ct-o-${SFX}`,
	VIEWER = `ct-v-${SFX}`;
// The bad requests of a route that changes or removes a resource go to a
// second one (badOn), so that one acted on shows and the valid request
// still finds its resource as it was.
const SPARE = { label: 'a second one, for the bad requests', noBad: true };
const quota = { max_gpus: 64, max_running_jobs: 4, gpu_hours_per_month: 1000, max_storage_bytes: 1000000000, weight: 1 };

// meta and probes
await call('getHealth', { token: null });
await call('getReadiness', { token: null });
await call('getOpenApiDocument', { token: null });
await call('getMetrics');
await call('getWebView', { token: null });
await call('getWebViewScript', { token: null });
await call('getWebViewStyle', { token: null });
await call('getWhoami');
await call('createPlan', { body: { model: { preset: 'tiny' }, global_batch: 8, micro_batch: 4, devices: 1, peak_flops: 1e12, link_bytes_per_s: 1e9 } });

// tenants, users, members, tokens
ctx.ta = idOf(await call('createTenant', { body: { name: TA, display_name: 'Contract A' } }));
ctx.tb = idOf(await call('createTenant', { body: { name: TB }, label: 'a second tenant', noBad: true }));
ctx.tc = idOf(await call('createTenant', { body: { name: TC }, label: 'a tenant whose keys are shredded', noBad: true }));
await call('listTenants');
await call('getTenant', { path: { tenant: TA } });
await call('getQuota', { path: { tenant: TA } });
await call('updateQuota', { path: { tenant: TA }, body: quota });
await call('updateQuota', { path: { tenant: TB }, body: quota, label: 'the second tenant', noBad: true });
await call('getTenantUsage', { path: { tenant: TA }, query: { days: 7 } });
await call('listAlerts', { path: { tenant: TA } });
await call('listMembers', { path: { tenant: TA } });
ctx.user = idOf(await call('createUser', { body: { name: USER, email: `${USER}@example.com` } }));
await call('listUsers');
await call('grantMember', { path: { tenant: TA, user: USER }, body: { role: 'editor' } });
const tok = await call('createToken', { path: { user: USER }, body: { name: 'contract', expires_in_days: 1 } });
ctx.tokenId = idOf(tok);
ctx.tokenId2 = idOf(await call('createToken', { path: { user: USER }, body: { name: 'contract-2' }, ...SPARE }));
await call('createUser', { body: { name: VIEWER }, ...SPARE });
await call('grantMember', { path: { tenant: TA, user: VIEWER }, body: { role: 'viewer' }, ...SPARE });
// an owner of the tenant, whose grants of confidential things wait for the
// platform admin's approval
await call('createUser', { body: { name: OWNER }, label: 'an owner', noBad: true });
await call('grantMember', { path: { tenant: TA, user: OWNER }, body: { role: 'owner' }, label: 'an owner', noBad: true });
const OWNER_TOKEN = idOf(await call('createToken', { path: { user: OWNER }, body: { name: 'contract' }, label: 'the owner\'s', noBad: true }), 'token');
await call('listTokens', { path: { user: USER } });
await call('getTenantIdentity', { path: { tenant: TA } });
const ident = (await sendOnce({ method: 'GET', path: `/v1/tenants/${TA}/identity`, headers: auth(ADMIN) }));
let identUser;
try { identUser = JSON.parse(ident.body.toString()).user; } catch { /* below */ }
if (identUser) await call('setTenantIdentity', { path: { tenant: TA }, body: { user: identUser }, label: 'the user it has: a no-op' });

// webhooks
ctx.webhook = idOf(await call('createWebhook', { path: { tenant: TA }, body: { url: 'http://127.0.0.1:9/contract', allow_private: true } }));
ctx.webhook2 = idOf(await call('createWebhook', { path: { tenant: TA }, body: { url: 'http://127.0.0.1:9/contract-2', allow_private: true }, ...SPARE }));
await call('listWebhooks', { path: { tenant: TA } });
await call('listWebhookDeliveries', { path: { tenant: TA, webhook: ctx.webhook } });

// priority classes
await call('listPriorityClasses');
await call('putPriorityClass', { path: { class: `ct-${SFX}` }, body: { value: 5, description: 'contract test' } });
await call('putPriorityClass', { path: { class: `ct2-${SFX}` }, body: { value: 6 }, ...SPARE });

// datasets
await call('createDataset', { path: { tenant: TA }, body: { name: 'corpus', classification: 'confidential', description: 'contract test' } });
await call('createDataset', { path: { tenant: TA }, body: { name: 'secret', classification: 'restricted' }, label: 'a restricted dataset', noBad: true });
await call('listDatasets', { path: { tenant: TA } });
const text = 'the quick brown fox jumps over the lazy dog\n'.repeat(200);
const up = await call('uploadDatasetVersion', { path: { tenant: TA, dataset: 'corpus' }, query: { format: 'text' }, body: text, type: 'text/plain' });
ctx.dsVersion = idOf(up);
await call('getDataset', { path: { tenant: TA, dataset: 'corpus' } });
await call('exemptDataset', { path: { tenant: TA, dataset: 'secret' }, body: { reason: 'contract test' } });
const dsg = await call('grantDataset', { path: { tenant: TA, dataset: 'corpus' }, body: { tenant: TB, expires_at: inDays(30) }, token: OWNER_TOKEN });
ctx.dsGrant = idOf(dsg);
ctx.dsGrant2 = idOf(await call('grantDataset', { path: { tenant: TA, dataset: 'corpus' }, body: { tenant: TC, expires_at: inDays(30) }, token: OWNER_TOKEN, ...SPARE }));
await call('listDatasetGrants', { path: { tenant: TA, dataset: 'corpus' } });
await call('approveDatasetGrant', { path: { tenant: TA, dataset: 'corpus', grant: ctx.dsGrant }, badOn: { grant: ctx.dsGrant2 } });
await call('listSharedDatasets', { path: { tenant: TB } });

// code bundles
await call('createCodeBundle', { path: { tenant: TA }, body: { name: 'trainer', classification: 'confidential', description: 'contract test' } });
await call('listCodeBundles', { path: { tenant: TA } });
let codeUploaded = false;
if (CODE_TAR && fs.existsSync(CODE_TAR)) {
	const cv = await call('uploadCodeVersion', { path: { tenant: TA, code: 'trainer' }, body: fs.readFileSync(CODE_TAR), type: 'application/x-tar' });
	codeUploaded = !!cv?.valid;
} else {
	unexercised.set('uploadCodeVersion', 'CONTRACT_CODE_TAR names no archive');
}
await call('getCodeBundle', { path: { tenant: TA, code: 'trainer' } });
await call('listCodeFiles', { path: { tenant: TA, code: 'trainer', version: 1 } });
ctx.codeGrant = idOf(await call('grantCode', { path: { tenant: TA, code: 'trainer' }, body: { tenant: TB, expires_at: inDays(30) }, token: OWNER_TOKEN }));
ctx.codeGrant2 = idOf(await call('grantCode', { path: { tenant: TA, code: 'trainer' }, body: { tenant: TC, expires_at: inDays(30) }, token: OWNER_TOKEN, ...SPARE }));
await call('listCodeGrants', { path: { tenant: TA, code: 'trainer' } });
await call('approveCodeGrant', { path: { tenant: TA, code: 'trainer', grant: ctx.codeGrant }, badOn: { grant: ctx.codeGrant2 } });
await call('listSharedCode', { path: { tenant: TB } });

// jobs
const j1 = await call('submitJob', { path: { tenant: TA }, body: tiny('contract-1', { data: { dataset: 'corpus' } }), headers: { 'Idempotency-Key': `ct-${SFX}-1` } });
ctx.j1 = idOf(j1);
ctx.j2 = idOf(await call('submitJob', { path: { tenant: TA }, body: tiny('contract-2', { data: { train: 'x_*.bin' } }), label: 'a job to cancel', noBad: true }));
ctx.j3 = idOf(await call('submitJob', { path: { tenant: TA }, body: tiny('contract-3', { data: { train: 'x_*.bin' } }), label: 'a job left queued', noBad: true }));
ctx.j6 = idOf(await call('submitJob', { path: { tenant: TA }, body: tiny('contract-6', { data: { train: 'x_*.bin' } }), ...SPARE }));
await call('listJobs', { path: { tenant: TA }, query: { limit: 10 } });
await call('getJob', { path: { job: ctx.j1 } });
await call('getJobEta', { path: { job: ctx.j3 } });

// an attempt and the runtime's routes, with its credential
const att = await call('createAttempt', { path: { job: ctx.j1 }, badOn: { job: ctx.j3 } });
ctx.a1 = idOf(att);
ctx.cred = idOf(att, 'credential');
const C = ctx.cred;
await call('getAttempt', { path: { attempt: ctx.a1 }, token: C });
await call('attemptHeartbeat', { path: { attempt: ctx.a1 }, token: C, body: { log_bytes: 0 } });
await call('attemptMetrics', { path: { attempt: ctx.a1 }, token: C, body: { steps: [{ step: 1, loss: 5.5 }, { step: 2, loss: 5.25 }] } });
ctx.keys = idOf(await call('fetchDataKey', { path: { attempt: ctx.a1 }, token: C }), 'keys');
// the attempt's sealed log and checkpoint, written as the runtime writes them
let shard = { bytes: 4096, sha256: sha('x') }, sealed = false;
const seal = (...args) => spawnSync(SEAL, [args[0], STORAGE_ROOT, ctx.ta, ctx.j1, ...args.slice(1).map(String)], { input: `${ctx.keys}\n`, encoding: 'utf8' });
if (SEAL && STORAGE_ROOT && ctx.keys && ctx.ta && ctx.j1) {
	const lg = seal('log', 1, 1, 3, 'close');
	const cp = seal('checkpoint', 2, 4096);
	const m = /^(\d+) ([0-9a-f]{64})$/.exec((cp.stdout || '').trim());
	if (lg.status === 0 && cp.status === 0 && m) {
		shard = { bytes: Number(m[1]), sha256: m[2] };
		sealed = true;
	} else notOk(`tool_seal could not write the attempt's files: ${(lg.stderr || '') + (cp.stderr || '')}`.trim());
} else {
	note('the attempt writes no sealed files (CONTRACT_SEAL or CONTRACT_STORAGE_ROOT not set): the download routes answer no file');
}
const ck = await call('registerCheckpoint', { path: { attempt: ctx.a1 }, token: C, body: { step: 2, world: 1, shards: [{ name: 'shard_00000_of_00001.bin', ...shard }] } });
ctx.ckpt = idOf(ck);
await call('attemptEvent', { path: { attempt: ctx.a1 }, token: C, body: { kind: 'fallback', reason: 'contract test' } });
await call('fetchDatasetKey', { path: { attempt: ctx.a1, version: ctx.dsVersion }, token: C });
await call('finishAttempt', { path: { attempt: ctx.a1 }, token: C, body: { outcome: 'succeeded' } });

// the job's results
await call('listJobEvents', { path: { job: ctx.j1 } });
await call('listJobMetrics', { path: { job: ctx.j1 }, query: { after: 0 } });
await call('getJobGoodput', { path: { job: ctx.j1 } });
await call('listJobCheckpoints', { path: { job: ctx.j1 } });
await call('getJobLogs', { path: { job: ctx.j1 } });
await call('getCheckpoint', { path: { checkpoint: ctx.ckpt } });
await call('getCheckpointLineage', { path: { checkpoint: ctx.ckpt } });
await call('listDerivedCheckpoints', { path: { tenant: TA, dataset: 'corpus' } });
const fileOf = (what) => (sealed ? {} : { expect: [200, 404], label: `${what} without sealed files` });
const dl = await call('downloadCheckpointFile', { path: { checkpoint: ctx.ckpt }, query: { file: 'shard_00000_of_00001.bin' }, ...fileOf('a checkpoint') });
if (dl && dl.valid && sealed && dl.body.length !== shard.bytes) notOk(`downloadCheckpointFile: ${dl.body.length} bytes sent, the shard has ${shard.bytes}`);
if (dl && dl.status !== 200) note(`downloadCheckpointFile: no success exercised: the checkpoint has no sealed files (answered ${dl.status} ${problemCode(dl) || ''})`);

// checkpoint grants
ctx.ckGrant = idOf(await call('grantCheckpoint', { path: { checkpoint: ctx.ckpt }, body: { tenant: TB, expires_at: inDays(30), download: true }, token: OWNER_TOKEN }));
ctx.ckGrant2 = idOf(await call('grantCheckpoint', { path: { checkpoint: ctx.ckpt }, body: { tenant: TC, expires_at: inDays(30) }, token: OWNER_TOKEN, ...SPARE }));
await call('listCheckpointGrants', { path: { checkpoint: ctx.ckpt } });
await call('approveCheckpointGrant', { path: { checkpoint: ctx.ckpt, grant: ctx.ckGrant }, badOn: { grant: ctx.ckGrant2 } });
await call('listSharedCheckpoints', { path: { tenant: TB } });
const sdl = await call('downloadSharedCheckpointFile', { path: { tenant: TB, checkpoint: ctx.ckpt }, query: { file: 'shard_00000_of_00001.bin' }, ...fileOf('a shared checkpoint') });
if (sdl && sdl.status !== 200) note(`downloadSharedCheckpointFile: no success exercised: the shared checkpoint has no sealed files (answered ${sdl.status} ${problemCode(sdl) || ''})`);

// a job started from the checkpoint, and a command job of the code bundle
ctx.j4 = idOf(await call('submitJob', { path: { tenant: TA }, body: tiny('contract-4', { data: { train: 'x_*.bin' }, training: { steps: 10, init_from: ctx.ckpt } }), label: 'started from a checkpoint', noBad: true }));
if (ctx.j4) {
	const a4 = await call('createAttempt', { path: { job: ctx.j4 }, label: 'of the job started from a checkpoint', noBad: true });
	ctx.a4 = idOf(a4); ctx.cred4 = idOf(a4, 'credential');
	await call('fetchInitKey', { path: { attempt: ctx.a4 }, token: ctx.cred4 });
	const f = await call('fetchInitFile', { path: { attempt: ctx.a4, file: 'shard_00000_of_00001.bin' }, token: ctx.cred4, ...fileOf('a checkpoint') });
	if (f && f.status !== 200) note(`fetchInitFile: no success exercised: the checkpoint started from has no sealed files (answered ${f.status} ${problemCode(f) || ''})`);
}
if (codeUploaded) {
	ctx.j5 = idOf(await call('submitJob', { path: { tenant: TA }, body: { name: 'contract-5', kind: 'command', code: 'trainer', command: ['bash', 'run.sh'], resources: { nodes: 1, ranks_per_node: 1 } }, label: 'a command job', noBad: true }));
	if (ctx.j5) {
		const a5 = await call('createAttempt', { path: { job: ctx.j5 }, label: 'of the command job', noBad: true });
		ctx.a5 = idOf(a5); ctx.cred5 = idOf(a5, 'credential');
		await call('fetchCodeKey', { path: { attempt: ctx.a5 }, token: ctx.cred5 });
	}
} else {
	unexercised.set('fetchCodeKey', 'no command job: no code version was uploaded (CONTRACT_CODE_TAR)');
}

// keys
await call('rotateTenantKey', { path: { tenant: TA }, body: { data_keys: true } });
await call('getMasterKeyStatus');

// the audit log
await call('getAuditSigningKey');
await call('createAuditHead');
const headRes = await call('getAuditHead');
const size = headRes?.valid ? headRes.json().size : undefined;
if (size !== undefined) {
	await call('getAuditInclusionProof', { query: { seq: 0, tree_size: size } });
	await call('getAuditConsistencyProof', { query: { first: 1, second: size } });
} else {
	note('getAuditInclusionProof, getAuditConsistencyProof: not exercised: no audit head to ask a proof of');
}
await call('exportAuditLog');
await call('getReport', { path: { kind: 'access-review' }, query: { format: 'json' } });
await call('getReport', { path: { kind: 'denials' }, query: { format: 'csv' }, label: 'as CSV', noBad: true });
await call('getTenantReport', { path: { tenant: TA, kind: 'data-access' }, query: { format: 'json' } });
await call('getTenantReport', { path: { tenant: TA, kind: 'access-review' }, query: { format: 'html' }, label: 'as HTML', noBad: true });

// the end of what was made: cancel, revoke, delete, shred
await call('cancelJob', { path: { job: ctx.j2 }, badOn: { job: ctx.j6 } });
await call('revokeCheckpointGrant', { path: { checkpoint: ctx.ckpt, grant: ctx.ckGrant }, badOn: { grant: ctx.ckGrant2 } });
await call('revokeCodeGrant', { path: { tenant: TA, code: 'trainer', grant: ctx.codeGrant }, badOn: { grant: ctx.codeGrant2 } });
await call('revokeDatasetGrant', { path: { tenant: TA, dataset: 'corpus', grant: ctx.dsGrant }, badOn: { grant: ctx.dsGrant2 } });
await call('deleteWebhook', { path: { tenant: TA, webhook: ctx.webhook }, badOn: { webhook: ctx.webhook2 } });
await call('deletePriorityClass', { path: { class: `ct-${SFX}` }, badOn: { class: `ct2-${SFX}` } });
// the spare class too: classes are the platform's, and the other tests list them
await call('deletePriorityClass', { path: { class: `ct2-${SFX}` }, label: 'the spare one', noBad: true });
await call('revokeToken', { path: { token_id: ctx.tokenId }, badOn: { token_id: ctx.tokenId2 } });
await call('revokeMember', { path: { tenant: TA, user: USER }, badOn: { user: VIEWER } });
// shredding twice is the same as once: the bad requests go to the same tenant
await call('shredTenantKeys', { path: { tenant: TC } });

// ---- 405 and Allow --------------------------------------------------------

const samplePath = (path) => path.replace(/\{([^}]+)\}/g, (_, n) => ({
	tenant: TA, user: USER, job: ctx.j1, attempt: ctx.a1, checkpoint: ctx.ckpt, token_id: ctx.tokenId,
	dataset: 'corpus', code: 'trainer', webhook: ctx.webhook, grant: ctx.dsGrant, version: 1, kind: 'access-review',
	file: 'x', class: 'x',
}[n] ?? 'x'));
for (const [path, item] of Object.entries(doc.paths)) {
	const have = METHODS.filter((m) => item[m]).map((m) => m.toUpperCase());
	const missing = ['PATCH', 'PUT', 'DELETE', 'POST'].find((m) => !have.includes(m));
	if (!missing) continue;
	const res = await send({ method: missing, path: samplePath(path), headers: auth(ADMIN) });
	const probs = [];
	if (res.status !== 405) probs.push(`expected 405, got ${res.status}`);
	else {
		probs.push(...problemShape(res, null));
		const allow = res.headers.allow;
		if (allow === undefined) probs.push('no Allow header');
		else {
			const got = new Set(allow.split(',').map((s) => s.trim().toUpperCase()).filter(Boolean));
			got.delete('HEAD'); got.delete('OPTIONS');
			const want = new Set(have.filter((m) => m !== 'HEAD'));
			if (got.size !== want.size || [...want].some((m) => !got.has(m))) probs.push(`Allow: ${allow}, documented methods: ${have.join(', ')}`);
		}
	}
	if (probs.length) notOk(`405 ${missing} ${path}: ${probs.join('; ')}`);
	else ok(`405 ${missing} ${path}: Allow ${res.headers.allow}`);
}

// ---- the statuses every operation documents -------------------------------

// Every route answers a body of the wrong media type (415), one over the
// limit (413) and an internal error (500), and all but the uploads (which
// take raw bytes) a malformed JSON one (400); one that needs a token also a
// missing one (401) and the rate limit (429). 503 (the database) is checked
// by the answers alone.
for (const o of ops.values()) {
	const upload = o.op.requestBody && !o.op.requestBody.content?.['application/json'];
	const want = [...(upload ? [] : ['400']), '413', '415', '500', ...(o.public ? [] : ['401', '429'])];
	const missing = want.filter((st) => !(st in (o.op.responses || {})));
	if (missing.length) { notOk(`${o.id} ${o.method} ${o.path}: document: does not list ${missing.join(', ')}`); tallyOp(o.id, false); }
	else ok(`${o.id} ${o.method} ${o.path}: document lists ${want.join(', ')}`);
}

// ---- what was not exercised -----------------------------------------------

for (const o of ops.values()) {
	if (!exercised.has(o.id)) {
		const why = unexercised.get(o.id) || 'the run has no request for it';
		note(`${o.id} ${o.method} ${o.path}: not exercised: ${why}`);
		notOk(`${o.id} ${o.method} ${o.path}: no request was sent: ${why}`);
	} else if (!succeeded.has(o.id) && !cascaded.has(o.id)) {
		note(`${o.id} ${o.method} ${o.path}: no valid request answered 2xx`);
	}
}
for (const o of ops.values()) {
	const t = perOp.get(o.id) || { ok: 0, bad: 0 };
	console.log(`# ${o.id} ${o.method} ${o.path}: ${t.ok} passed, ${t.bad} failed${succeeded.has(o.id) ? '' : ', no valid request answered 2xx'}`);
}
const opsBad = [...perOp.entries()].filter(([, t]) => t.bad > 0).map(([id]) => id);
console.log(`# operations: ${ops.size} in the document, ${exercised.size} exercised, ${succeeded.size} answered a valid request with 2xx, ${opsBad.length} with a failure${opsBad.length ? `: ${opsBad.join(' ')}` : ''}`);
console.log(`${passed} passed, ${failed} failed, ${notes} notes`);
process.exit(failed ? 1 : 0);
