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
export declare const PROTOCOL_VERSION = "1.3";
/** The W3C `traceparent` of the request being handled (a tool call, an
 * invoke, a hook or a route inside a run), or undefined: pass it to your own
 * tracing so your spans join the run's trace. */
export declare function traceparent(): string | undefined;
/** A JSON value. */
export type Json = null | boolean | number | string | Json[] | {
    [key: string]: Json;
};
/** A JSON Schema. */
export type Schema = {
    [key: string]: Json;
};
/** How chassis treats calls of a tool. */
export interface ToolPolicy {
    permissions?: string[];
    idempotent?: boolean;
    side_effects?: string[];
    timeout_seconds?: number;
    cost_class?: string;
    approval_required?: boolean;
}
/** A tool's declaration. */
export interface ToolSpec {
    name: string;
    description: string;
    inputSchema: Schema;
    policy?: ToolPolicy;
}
/** A capability method's declaration. */
export interface MethodSpec {
    name: string;
    description?: string;
    inputSchema: Schema;
    /** What the method answers: chassis holds its answers to it. */
    resultSchema?: Schema;
    permissions?: string[];
}
type Handler = (args: any) => unknown | Promise<unknown>;
/** A plugin's declaration; it must equal the TOML manifest. */
export interface Declaration {
    name: string;
    version: string;
    provides?: {
        [capability: string]: string | string[];
    };
    requires?: {
        [capability: string]: string;
    };
    optional?: {
        [capability: string]: string;
    };
    maxConcurrency?: number;
}
/** Thrown by a `bail` hook: refuse the operation, with a reason. */
export declare class Bail extends Error {
}
/** A hook's declaration. */
export interface HookSpec {
    event: string;
    mode?: "observe" | "transform" | "bail";
    priority?: number;
    errorPolicy?: "record" | "raise";
}
/** An agent a plugin defines: the fields of an `[agents.NAME]` table. */
export interface AgentSpec {
    name: string;
    prompt: string;
    description?: string;
    tools?: string[];
    subAgents?: string[];
    model?: string;
    modelVersion?: string;
    maxSteps?: number;
    budget?: {
        [dimension: string]: number;
    };
    temperature?: number;
    maxTokens?: number;
    defaultInput?: string;
    revision?: string;
}
/** A capability method call chassis or the provider refused. */
/** An HTTP request to one of the plugin's routes (`chassis serve` answers
 * them under /plugins/ENTRY/...). Headers have lowercase names and never
 * carry credentials. */
export interface RouteRequest {
    method: string;
    path: string;
    query: string;
    headers: {
        [name: string]: string;
    };
    body: string;
}
/** What a route answers when a status or headers matter; a route may also
 * return a string (200, text/plain) or any JSON value (200, application/json). */
export declare class RouteResponse {
    readonly body: Json;
    readonly status: number;
    readonly headers: {
        [name: string]: string;
    };
    constructor(body?: Json, status?: number, headers?: {
        [name: string]: string;
    });
}
export declare class InvokeError extends Error {
    code: number;
    constructor(code: number, message: string);
}
/** A small schema builder: `s.object({ name: s.string() }, ["name"])`. */
export declare const s: {
    string: () => Schema;
    integer: () => Schema;
    number: () => Schema;
    boolean: () => Schema;
    array: (items: Schema) => Schema;
    enum: (...values: string[]) => Schema;
    object: (properties: {
        [key: string]: Schema;
    }, required?: string[]) => Schema;
};
/** The provider bound to one requirement. */
export declare class Provider {
    private plugin;
    readonly key: string;
    readonly provider: string;
    readonly version: string;
    readonly value: Json | undefined;
    constructor(plugin: Plugin, key: string, bound: any);
    /** Call `method` of this capability through chassis. */
    invoke(method: string, args?: {
        [key: string]: Json;
    }): Promise<Json>;
}
/** What setup receives. */
export declare class PluginContext {
    private plugin;
    readonly entry: string;
    readonly scope: string;
    readonly config: {
        [key: string]: Json;
    };
    /** @internal */ toolTable: Map<string, {
        spec: ToolSpec;
        fn: Handler;
    }>;
    /** @internal */ methodTable: Map<string, Map<string, Handler>>;
    /** @internal */ capabilityList: Json[];
    /** @internal */ hookList: Array<[Json, (event: string, payload: Json) => unknown]>;
    /** @internal */ routeList: Array<[Json, (request: RouteRequest) => unknown]>;
    /** @internal */ agentList: Json[];
    /** @internal */ cleanups: Array<[string, () => unknown]>;
    /** @internal */ sealed: boolean;
    private requirements;
    constructor(plugin: Plugin, params: any);
    private open;
    readonly tools: {
        register: (spec: ToolSpec, fn: Handler) => void;
    };
    readonly hooks: {
        /**
         * Call `fn(event, payload)` on `spec.event`: return undefined to go on,
         * a new payload to transform (mode "transform"), or throw `new Bail(reason)`
         * to refuse (mode "bail").
         */
        register: (spec: HookSpec, fn: (event: string, payload: Json) => unknown) => void;
    };
    readonly routes: {
        /**
         * Answer `spec.method` requests to `spec.path` (under /plugins/ENTRY;
         * exact, or a prefix ending in `/*`) with `fn(request)`. Routes are pinned
         * in chassis.lock (`chassis tools FILE --update-lock`).
         */
        register: (spec: {
            method: string;
            path: string;
        }, fn: (request: RouteRequest) => unknown) => void;
    };
    readonly agents: {
        /**
         * Define the agent `spec.name` (the fields of an `[agents.NAME]` table):
         * chassis's loop runs it, and other agents may list it in `sub_agents`.
         * Agents are pinned in chassis.lock (`chassis tools FILE --update-lock`).
         */
        register: (spec: AgentSpec) => void;
    };
    readonly capabilities: {
        provide: (key: string, options: {
            version: string;
            value?: Json;
            methods?: Array<[MethodSpec, Handler]>;
        }) => void;
    };
    /** The provider bound to requirement `key`. */
    require(key: string): Provider;
    /** Like require, but undefined when nothing is bound. */
    get(key: string): Provider | undefined;
    /** Run `fn` at teardown (in reverse order). */
    cleanup(description: string, fn: () => unknown): void;
}
/** A plugin: its declaration and setup. */
export declare class Plugin {
    private declaration;
    private setupFn;
    private ctx;
    /** The context of a setup under way: its cleanups run if chassis tears the plugin down before the setup returns. */
    private settingUp;
    private out;
    private nextId;
    private waiting;
    private cancelled;
    private inflight;
    private running;
    /** Set once `teardown` arrived: the end of input is then expected. */
    private stopping;
    private queue;
    constructor(declaration: Declaration, setupFn: (ctx: PluginContext) => unknown | Promise<unknown>);
    private info;
    /** @internal Send a request to chassis and wait for its answer. */
    request(method: string, params: Json): Promise<Json>;
    private reply;
    private initialize;
    private setup;
    private toolsCall;
    private invoke;
    private dispatch;
    private http;
    private teardown;
    private handle;
    /** Run `job` when fewer than maxConcurrency requests are running. */
    private schedule;
    /** Serve chassis on stdin/stdout until teardown or end of input. */
    run(): void;
}
/** Declare a plugin with its setup function (sync or async). */
export declare function plugin(declaration: Declaration, setup: (ctx: PluginContext) => unknown | Promise<unknown>): Plugin;
export {};
