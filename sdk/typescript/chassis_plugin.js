"use strict";
/**
 * chassis_plugin: write a chassis plugin in TypeScript (or JavaScript).
 *
 * A plugin is a program chassis starts (`[plugins.NAME] command = ["node",
 * "plugin.js"]`). It speaks the chassis plugin protocol (JSON-RPC 2.0, one
 * message per line on stdin/stdout; see `docs/plugin-protocol.md`). This file
 * is the whole SDK: Node >= 18, no dependencies. Vendor the compiled
 * `chassis_plugin.js` beside your plugin.
 *
 *     const { plugin } = require("./chassis_plugin");
 *     plugin({ name: "greeter", version: "1.0.0", provides: { greeting: "1.0.0" } },
 *       (ctx) => {
 *         ctx.tools.register({
 *           name: "greet", description: "Greet someone by name.",
 *           inputSchema: { type: "object", properties: { name: { type: "string" } },
 *                          required: ["name"], additionalProperties: false },
 *         }, ({ name }) => `Hello, ${name}.`);
 *       }).run();
 *
 * The declaration must equal the plugin's TOML manifest; chassis checks it
 * at start. stdout belongs to the protocol: `console.log` and friends write
 * to stderr.
 */
Object.defineProperty(exports, "__esModule", { value: true });
exports.Plugin = exports.PluginContext = exports.Provider = exports.s = exports.InvokeError = exports.RouteResponse = exports.Bail = exports.PROTOCOL_VERSION = void 0;
exports.traceparent = traceparent;
exports.plugin = plugin;
const async_hooks_1 = require("async_hooks");
const readline = require("readline");
exports.PROTOCOL_VERSION = "1.3";
/** The `call_id` of the tool call being handled: an invoke made while
 * handling it (awaited from the handler) runs under the call's run. */
const currentCall = new async_hooks_1.AsyncLocalStorage();
/** The W3C `traceparent` of the request being handled (its `_meta`). */
const currentTrace = new async_hooks_1.AsyncLocalStorage();
/** The W3C `traceparent` of the request being handled (a tool call, an
 * invoke, a hook or a route inside a run), or undefined: pass it to your own
 * tracing so your spans join the run's trace. */
function traceparent() {
    return currentTrace.getStore();
}
const MAX_MESSAGE_BYTES = 16 << 20;
const METHOD_NOT_FOUND = -32601;
const INVALID_PARAMS = -32602;
const INTERNAL_ERROR = -32603;
const CANCELLED = -32800;
/** Thrown by a `bail` hook: refuse the operation, with a reason. */
class Bail extends Error {
}
exports.Bail = Bail;
/** What a route answers when a status or headers matter; a route may also
 * return a string (200, text/plain) or any JSON value (200, application/json). */
class RouteResponse {
    constructor(body = "", status = 200, headers = {}) {
        this.body = body;
        this.status = status;
        this.headers = headers;
    }
}
exports.RouteResponse = RouteResponse;
class InvokeError extends Error {
    constructor(code, message) {
        super(message);
        this.code = code;
    }
}
exports.InvokeError = InvokeError;
/** A small schema builder: `s.object({ name: s.string() }, ["name"])`. */
exports.s = {
    string: () => ({ type: "string" }),
    integer: () => ({ type: "integer" }),
    number: () => ({ type: "number" }),
    boolean: () => ({ type: "boolean" }),
    array: (items) => ({ type: "array", items }),
    enum: (...values) => ({ enum: values }),
    object: (properties, required = Object.keys(properties)) => ({
        type: "object",
        properties,
        required,
        additionalProperties: false,
    }),
};
/** The provider bound to one requirement. */
class Provider {
    constructor(plugin, key, bound) {
        this.plugin = plugin;
        this.key = key;
        this.provider = bound.provider;
        this.version = bound.version;
        this.value = bound.value;
    }
    /** Call `method` of this capability through chassis. */
    async invoke(method, args = {}) {
        const params = { key: this.key, method, arguments: args };
        const call = currentCall.getStore();
        if (call !== undefined)
            params.call_id = call;
        const reply = await this.plugin.request("capability/invoke", params);
        return reply && typeof reply === "object" ? reply.result : reply;
    }
}
exports.Provider = Provider;
/** What setup receives. */
class PluginContext {
    constructor(plugin, params) {
        this.plugin = plugin;
        /** @internal */ this.toolTable = new Map();
        /** @internal */ this.methodTable = new Map();
        /** @internal */ this.capabilityList = [];
        /** @internal */ this.hookList = [];
        /** @internal */ this.routeList = [];
        /** @internal */ this.agentList = [];
        /** @internal */ this.cleanups = [];
        /** @internal */ this.sealed = false;
        this.tools = {
            register: (spec, fn) => {
                this.open();
                if (!spec.description)
                    throw new Error(`tool \`${spec.name}\` needs a description`);
                if (this.toolTable.has(spec.name))
                    throw new Error(`tool \`${spec.name}\` is registered twice`);
                this.toolTable.set(spec.name, { spec, fn });
            },
        };
        this.hooks = {
            /**
             * Call `fn(event, payload)` on `spec.event`: return undefined to go on,
             * a new payload to transform (mode "transform"), or throw `new Bail(reason)`
             * to refuse (mode "bail").
             */
            register: (spec, fn) => {
                this.open();
                const mode = spec.mode ?? "observe";
                if (!["observe", "transform", "bail"].includes(mode))
                    throw new Error(`hook mode \`${mode}\` is not observe, transform or bail`);
                this.hookList.push([
                    { event: spec.event, mode, priority: spec.priority ?? 0, error_policy: spec.errorPolicy ?? "record" },
                    fn,
                ]);
            },
        };
        this.routes = {
            /**
             * Answer `spec.method` requests to `spec.path` (under /plugins/ENTRY;
             * exact, or a prefix ending in `/*`) with `fn(request)`. Routes are pinned
             * in chassis.lock (`chassis tools FILE --update-lock`).
             */
            register: (spec, fn) => {
                this.open();
                const method = spec.method.toUpperCase();
                if (!["GET", "POST", "PUT", "PATCH", "DELETE"].includes(method))
                    throw new Error(`route method \`${method}\` is not GET, POST, PUT, PATCH or DELETE`);
                if (!spec.path.startsWith("/"))
                    throw new Error(`route path \`${spec.path}\` must start with \`/\``);
                this.routeList.push([{ method, path: spec.path }, fn]);
            },
        };
        this.agents = {
            /**
             * Define the agent `spec.name` (the fields of an `[agents.NAME]` table):
             * chassis's loop runs it, and other agents may list it in `sub_agents`.
             * Agents are pinned in chassis.lock (`chassis tools FILE --update-lock`).
             */
            register: (spec) => {
                this.open();
                if (this.agentList.some((a) => a.name === spec.name))
                    throw new Error(`agent \`${spec.name}\` is registered twice`);
                const wire = { name: spec.name, prompt: spec.prompt };
                const optional = {
                    description: spec.description || undefined,
                    tools: spec.tools,
                    sub_agents: spec.subAgents && spec.subAgents.length > 0 ? spec.subAgents : undefined,
                    model: spec.model,
                    model_version: spec.modelVersion,
                    max_steps: spec.maxSteps,
                    budget: spec.budget && Object.keys(spec.budget).length > 0 ? spec.budget : undefined,
                    temperature: spec.temperature,
                    max_tokens: spec.maxTokens,
                    default_input: spec.defaultInput,
                    revision: spec.revision,
                };
                for (const [key, value] of Object.entries(optional))
                    if (value !== undefined)
                        wire[key] = value;
                this.agentList.push(wire);
            },
        };
        this.capabilities = {
            provide: (key, options) => {
                this.open();
                const table = new Map();
                const methods = [];
                for (const [spec, fn] of options.methods ?? []) {
                    if (table.has(spec.name))
                        throw new Error(`method \`${spec.name}\` of \`${key}\` is registered twice`);
                    table.set(spec.name, fn);
                    const method = {
                        name: spec.name,
                        description: spec.description ?? "",
                        input_schema: spec.inputSchema,
                        permissions: spec.permissions ?? [],
                    };
                    if (spec.resultSchema !== undefined)
                        method.result_schema = spec.resultSchema;
                    methods.push(method);
                }
                this.methodTable.set(key, table);
                const entry = { key, version: options.version, methods };
                if (options.value !== undefined)
                    entry.value = options.value;
                this.capabilityList.push(entry);
            },
        };
        this.entry = params.entry ?? "";
        this.scope = params.scope ?? "/";
        this.config = params.config ?? {};
        this.requirements = params.requirements ?? {};
    }
    open() {
        if (this.sealed)
            throw new Error("setup is over: register effects during setup");
    }
    /** The provider bound to requirement `key`. */
    require(key) {
        const bound = this.requirements[key];
        if (!bound)
            throw new Error(`\`${key}\` is not bound: declare it in requires and in the manifest`);
        return new Provider(this.plugin, key, bound);
    }
    /** Like require, but undefined when nothing is bound. */
    get(key) {
        return this.requirements[key] ? this.require(key) : undefined;
    }
    /** Run `fn` at teardown (in reverse order). */
    cleanup(description, fn) {
        this.cleanups.push([description, fn]);
    }
}
exports.PluginContext = PluginContext;
class RpcError extends Error {
    constructor(code, message) {
        super(message);
        this.code = code;
    }
}
/** A plugin: its declaration and setup. */
class Plugin {
    constructor(declaration, setupFn) {
        this.declaration = declaration;
        this.setupFn = setupFn;
        this.out = () => undefined;
        this.nextId = 0;
        this.waiting = new Map();
        this.cancelled = new Set();
        this.inflight = new Set();
        this.running = 0;
        /** Set once `teardown` arrived: the end of input is then expected. */
        this.stopping = false;
        this.queue = [];
    }
    info() {
        const d = this.declaration;
        const provides = {};
        for (const [k, v] of Object.entries(d.provides ?? {}))
            provides[k] = Array.isArray(v) ? v : [v];
        return {
            name: d.name,
            version: d.version,
            provides,
            requires: { ...(d.requires ?? {}) },
            optional: { ...(d.optional ?? {}) },
        };
    }
    /** @internal Send a request to chassis and wait for its answer. */
    request(method, params) {
        const id = `p${++this.nextId}`;
        return new Promise((resolve, reject) => {
            this.waiting.set(id, (msg) => {
                if (msg.error)
                    reject(new InvokeError(msg.error.code ?? INTERNAL_ERROR, msg.error.message ?? "error"));
                else
                    resolve(msg.result);
            });
            this.out(JSON.stringify({ jsonrpc: "2.0", id, method, params }));
        });
    }
    reply(id, result, error) {
        this.inflight.delete(id);
        if (this.cancelled.delete(id))
            return;
        const msg = { jsonrpc: "2.0", id };
        if (error)
            msg.error = { code: error[0], message: error[1] };
        else
            msg.result = result === undefined ? null : result;
        this.out(JSON.stringify(msg));
    }
    async initialize(params) {
        const theirs = String(params?.protocol_version ?? "");
        if (theirs.split(".")[0] !== exports.PROTOCOL_VERSION.split(".")[0]) {
            throw new RpcError(INVALID_PARAMS, `this plugin speaks protocol ${exports.PROTOCOL_VERSION}, not ${theirs}`);
        }
        const out = { protocol_version: exports.PROTOCOL_VERSION, plugin: this.info() };
        if (this.declaration.maxConcurrency !== undefined)
            out.max_concurrency = this.declaration.maxConcurrency;
        return out;
    }
    async setup(params) {
        if (!params || typeof params !== "object" || !("entry" in params)) {
            throw new RpcError(INVALID_PARAMS, "setup needs an object with `entry`");
        }
        const ctx = new PluginContext(this, params);
        this.settingUp = ctx;
        try {
            await this.setupFn(ctx);
        }
        finally {
            this.settingUp = undefined;
        }
        ctx.sealed = true;
        this.ctx = ctx;
        const tools = [];
        for (const { spec } of ctx.toolTable.values()) {
            tools.push({
                name: spec.name,
                description: spec.description,
                input_schema: spec.inputSchema,
                policy: (spec.policy ?? {}),
            });
        }
        return {
            capabilities: ctx.capabilityList,
            tools,
            hooks: ctx.hookList.map(([wire]) => wire),
            routes: ctx.routeList.map(([wire]) => wire),
            agents: ctx.agentList,
        };
    }
    async toolsCall(params) {
        const tool = this.ctx?.toolTable.get(params?.name);
        if (!tool)
            throw new RpcError(INVALID_PARAMS, `no tool \`${params?.name}\``);
        try {
            const callId = typeof params.call_id === "string" ? params.call_id : undefined;
            const result = await currentCall.run(callId, () => tool.fn(params.arguments ?? {}));
            return { content: (result === undefined ? "" : result), is_error: false };
        }
        catch (e) {
            console.error(e?.stack ?? String(e));
            return { content: `${e?.name ?? "Error"}: ${e?.message ?? String(e)}`, is_error: true };
        }
    }
    async invoke(params) {
        const fn = this.ctx?.methodTable.get(params?.key)?.get(params?.method);
        if (!fn)
            throw new RpcError(INVALID_PARAMS, `no method \`${params?.method}\` of \`${params?.key}\``);
        try {
            // What the method invokes in turn stays in the tool call that
            // invoked it (chassis's token for that call, 1.3).
            const callId = typeof params.call_id === "string" ? params.call_id : undefined;
            return { result: ((await currentCall.run(callId, () => fn(params.arguments ?? {}))) ?? null) };
        }
        catch (e) {
            if (e instanceof InvokeError)
                throw new RpcError(e.code, e.message);
            throw new RpcError(INTERNAL_ERROR, `${e?.name ?? "Error"}: ${e?.message ?? String(e)}`);
        }
    }
    async dispatch(params) {
        const hook = this.ctx?.hookList[params?.hook];
        if (!hook)
            throw new RpcError(INVALID_PARAMS, `no hook ${params?.hook}`);
        try {
            const out = await hook[1](params.event, params.payload ?? null);
            return out === undefined || out === null ? { action: "continue" } : { action: "transform", payload: out };
        }
        catch (e) {
            if (e instanceof Bail)
                return { action: "bail", reason: e.message };
            throw e;
        }
    }
    async http(params) {
        const route = this.ctx?.routeList[params?.route];
        if (!route)
            throw new RpcError(INVALID_PARAMS, `no route ${params?.route}`);
        const request = {
            method: params.method ?? "GET",
            path: params.path ?? "/",
            query: params.query ?? "",
            headers: params.headers ?? {},
            body: params.body ?? "",
        };
        let out;
        try {
            out = await route[1](request);
        }
        catch (e) {
            console.error(e?.stack ?? String(e));
            return { status: 500, headers: { "content-type": "text/plain" }, body: `${e?.name ?? "Error"}: ${e?.message ?? String(e)}` };
        }
        if (out === undefined || out === null)
            return { status: 204, headers: {}, body: "" };
        const response = out instanceof RouteResponse ? out : new RouteResponse(out);
        const headers = {};
        for (const [k, v] of Object.entries(response.headers))
            headers[k.toLowerCase()] = String(v);
        if (typeof response.body === "string") {
            if (!(out instanceof RouteResponse))
                headers["content-type"] = "text/plain; charset=utf-8";
            return { status: response.status, headers, body: response.body };
        }
        if (!("content-type" in headers))
            headers["content-type"] = "application/json";
        return { status: response.status, headers, body: JSON.stringify(response.body) };
    }
    async teardown() {
        // During a setup (chassis unmounts the plugin before it answered: an
        // interrupt, a shutdown), the cleanups it registered so far.
        const ctx = this.ctx ?? this.settingUp;
        for (const [description, fn] of [...(ctx?.cleanups ?? [])].reverse()) {
            try {
                await fn();
            }
            catch (e) {
                console.error(`cleanup \`${description}\` failed: ${e?.stack ?? e}`);
            }
        }
        return {};
    }
    async handle(id, method, params) {
        const handlers = {
            initialize: (p) => this.initialize(p),
            setup: (p) => this.setup(p),
            "tools/call": (p) => this.toolsCall(p),
            "capability/invoke": (p) => this.invoke(p),
            "hooks/dispatch": (p) => this.dispatch(p),
            "http/request": (p) => this.http(p),
            teardown: () => this.teardown(),
        };
        const handler = handlers[method];
        try {
            if (!handler)
                throw new RpcError(METHOD_NOT_FOUND, `no method \`${method}\``);
            const meta = params?._meta;
            const trace = typeof meta?.traceparent === "string" ? meta.traceparent : undefined;
            this.reply(id, await currentTrace.run(trace, () => handler(params ?? {})));
        }
        catch (e) {
            if (e instanceof RpcError)
                this.reply(id, undefined, [e.code, e.message]);
            else {
                console.error(e?.stack ?? String(e));
                this.reply(id, undefined, [INTERNAL_ERROR, `${e?.name ?? "Error"}: ${e?.message ?? String(e)}`]);
            }
        }
    }
    /** Run `job` when fewer than maxConcurrency requests are running. */
    schedule(job) {
        const limit = this.declaration.maxConcurrency ?? Infinity;
        const start = () => {
            this.running++;
            job().finally(() => {
                this.running--;
                const next = this.queue.shift();
                if (next)
                    next();
            });
        };
        if (this.running < limit)
            start();
        else
            this.queue.push(start);
    }
    /** Serve chassis on stdin/stdout until teardown or end of input. */
    run() {
        const stdout = process.stdout;
        this.out = (line) => {
            stdout.write(line + "\n");
        };
        // chassis no longer reads (it closed the connection: a line on stdout
        // that was not a message, or it stopped). Nothing more can be answered:
        // exit, and say so in one line rather than a stack, which would crowd
        // out of chassis's error the stderr lines the plugin wrote itself.
        stdout.on("error", () => {
            process.stderr.write("chassis_plugin: chassis closed the connection; exiting\n");
            process.exit(1);
        });
        // Everything else that writes to stdout goes to stderr.
        const toStderr = (...args) => process.stderr.write(args.map(String).join(" ") + "\n");
        console.log = toStderr;
        console.info = toStderr;
        console.debug = toStderr;
        const lines = readline.createInterface({ input: process.stdin, crlfDelay: Infinity });
        lines.on("line", (line) => {
            if (Buffer.byteLength(line) > MAX_MESSAGE_BYTES) {
                process.stderr.write("a message longer than 16 MiB; stopping\n");
                process.exit(1);
            }
            if (!line.trim())
                return;
            let msg;
            try {
                msg = JSON.parse(line);
            }
            catch {
                this.out(JSON.stringify({ jsonrpc: "2.0", id: null, error: { code: -32700, message: "not JSON" } }));
                return;
            }
            if (!msg || msg.jsonrpc !== "2.0") {
                this.out(JSON.stringify({ jsonrpc: "2.0", id: msg?.id ?? null, error: { code: -32600, message: "not a JSON-RPC message" } }));
                return;
            }
            if (!("method" in msg)) {
                const done = this.waiting.get(msg.id);
                if (done) {
                    this.waiting.delete(msg.id);
                    done(msg);
                }
                return;
            }
            if (!("id" in msg)) {
                // A request still running: its answer is dropped, chassis hears
                // at once that it was cancelled. One already answered is left alone.
                if (msg.method === "$/cancel" && msg.params && this.inflight.delete(msg.params.id)) {
                    this.cancelled.add(msg.params.id);
                    this.out(JSON.stringify({ jsonrpc: "2.0", id: msg.params.id, error: { code: CANCELLED, message: "cancelled" } }));
                }
                return;
            }
            if (msg.method === "teardown") {
                this.stopping = true;
                this.handle(msg.id, msg.method, msg.params).then(() => process.exit(0));
            }
            else if (msg.method === "initialize" || msg.method === "setup") {
                void this.handle(msg.id, msg.method, msg.params);
            }
            else {
                this.inflight.add(msg.id);
                this.schedule(() => this.handle(msg.id, msg.method, msg.params));
            }
        });
        // The end of input before `teardown` (chassis closed the connection, or
        // died) ends the process quietly, with status 1: it was not asked to stop.
        lines.on("close", () => process.exit(this.stopping ? 0 : 1));
    }
}
exports.Plugin = Plugin;
/** Declare a plugin with its setup function (sync or async). */
function plugin(declaration, setup) {
    return new Plugin(declaration, setup);
}
