import { Inject, Injectable } from '@nestjs/common';
import { ConfigType } from '@nestjs/config';
import { existsSync, readdirSync, statSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { z } from 'zod';
import { appConfig, llmConfig, routingConfig } from './env';
import {
  AGENT_POLICY_FILES,
  AgentPolicyFile,
  AgentsFile,
  agentsFileSchema,
  GLOBAL_TOOL_POLICY,
  LlmProfilesFile,
  llmProfilesFileSchema,
  RoutingFile,
  routingFileSchema,
  ToolPolicy,
  toolPolicySchema,
  ToolsFile,
  toolsFileSchema,
} from './config-files.schema';
import { PerAgent } from './per-agent';
import { ConfigFileError } from './config.errors';
import { loadYamlFile } from './yaml-loader';

/**
 * The validated contents of config/*.yaml, loaded once at start-up.
 * A missing or invalid file fails the start with the file path and the key path.
 */
@Injectable()
export class ConfigFilesService {
  readonly configDir: string;
  readonly llmProfiles: LlmProfilesFile;
  readonly agents: AgentsFile;
  /** routing.yaml: the router of every agent_id without its own routing file. */
  readonly routing: RoutingFile;
  /** Each agent_id's routing file (agents.yaml `routing`), ROUTING_MODE applied to every one. */
  readonly routings: PerAgent<RoutingFile>;
  readonly tools: ToolsFile;
  /** Each agent_id's tool policy (agents.yaml `tool_policy`). */
  readonly toolPolicies: PerAgent<ToolPolicy>;
  readonly llmProfilesPath: string;

  constructor(
    @Inject(appConfig.KEY) app: ConfigType<typeof appConfig>,
    @Inject(llmConfig.KEY) llm: ConfigType<typeof llmConfig>,
    @Inject(routingConfig.KEY) routingEnv: ConfigType<typeof routingConfig>,
  ) {
    this.configDir = resolve(app.CONFIG_DIR);
    this.llmProfilesPath = resolve(llm.LLM_PROFILES_PATH ?? join(this.configDir, 'llm_profiles.yaml'));
    this.llmProfiles = loadYamlFile(this.llmProfilesPath, llmProfilesFileSchema);
    this.agents = loadYamlFile(this.path('agents.yaml'), agentsFileSchema);
    this.checkAgentFiles();
    this.tools = loadYamlFile(this.path('tools.yaml'), toolsFileSchema);
    this.toolPolicies = this.perAgent('tool_policy', GLOBAL_TOOL_POLICY, (path) =>
      this.checkToolPolicy(path, loadYamlFile(path, toolPolicySchema)),
    );
    const routing = (path: string): RoutingFile => {
      const file = this.checkRouting(path, loadYamlFile(path, routingFileSchema));
      return routingEnv.ROUTING_MODE
        ? { ...file, router: { ...file.router, mode: routingEnv.ROUTING_MODE } }
        : file;
    };
    this.routing = routing(this.path('routing.yaml'));
    this.routings = this.perAgent('routing', this.routing, routing);
  }

  /** Absolute path of a file under CONFIG_DIR. */
  path(fileName: string): string {
    return join(this.configDir, fileName);
  }

  /** Loads another config file (guardrails.yaml, judges.yaml, ...) with the same error contract. */
  load<S extends z.ZodTypeAny>(fileName: string, schema: S): z.output<S> {
    return loadYamlFile(this.path(fileName), schema);
  }

  /**
   * Per-agent variants of a configuration: each agents.yaml entry naming its own `field` file gets `load` of it,
   * the others `global`. Each file is loaded once, however many agents name it, at start-up only.
   */
  perAgent<T>(field: AgentPolicyFile, global: T, load: (path: string) => T): PerAgent<T> {
    const byPath = new Map<string, T>();
    const own = new Map<string, T>();
    for (const [agentId, profile] of Object.entries(this.agents.agents)) {
      const file = profile[field];
      if (file === undefined) continue;
      const path = this.path(file);
      const value = byPath.get(path) ?? load(path);
      byPath.set(path, value);
      own.set(agentId, value);
    }
    return new PerAgent(global, own, Object.keys(this.agents.agents));
  }

  /** Whether `name` is a domain agent of the graph (an agents.yaml `graph_agents` key). */
  isGraphAgent(name: unknown): name is string {
    return typeof name === 'string' && name in this.agents.graph_agents;
  }

  /**
   * Every file agents.yaml points to must be there: a per-agent policy file, a graph agent's prompt, a
   * `prompts_dir` (a directory holding only `<graph agent>.md` files, so a misspelt name cannot go unused).
   */
  private checkAgentFiles(): void {
    const missing = (file: string) => `file not found: ${this.path(file)}`;
    const problems = [
      ...Object.entries(this.agents.agents).flatMap(([agentId, profile]) => [
        ...AGENT_POLICY_FILES.flatMap((field) => {
          const file = profile[field];
          return file === undefined || existsSync(this.path(file))
            ? []
            : [`agents.${agentId}.${field}: ${missing(file)}`];
        }),
        ...(profile.prompts_dir === undefined
          ? []
          : this.checkPromptsDir(profile.prompts_dir).map(
              (problem) => `agents.${agentId}.prompts_dir: ${problem}`,
            )),
      ]),
      ...Object.entries(this.agents.graph_agents).flatMap(([name, agent]) =>
        existsSync(this.path(agent.prompt)) ? [] : [`graph_agents.${name}.prompt: ${missing(agent.prompt)}`],
      ),
    ];
    if (problems.length > 0) throw new ConfigFileError(this.path('agents.yaml'), problems);
  }

  private checkPromptsDir(dir: string): string[] {
    const path = this.path(dir);
    if (!existsSync(path) || !statSync(path).isDirectory()) return [`directory not found: ${path}`];
    return readdirSync(path)
      .filter((file) => !(file.endsWith('.md') && this.isGraphAgent(file.slice(0, -'.md'.length))))
      .map((file) => `${join(path, file)} is not <graph agent>.md for a graph agent of graph_agents`);
  }

  private checkToolPolicy(path: string, policy: ToolPolicy): ToolPolicy {
    const problems: string[] = [];
    (policy.allowed_tools ?? []).forEach((tool, index) => {
      if (!(tool in this.tools.tools)) {
        problems.push(`allowed_tools[${index}]: "${tool}" is not declared in tools.yaml`);
      }
    });
    for (const tool of Object.keys(policy.require_confirmation)) {
      const config = this.tools.tools[tool];
      if (config?.operation_type !== 'transactional') {
        problems.push(
          `require_confirmation.${tool}: ${config ? 'not a transactional tool' : 'not declared in tools.yaml'}`,
        );
      }
    }
    if (problems.length > 0) throw new ConfigFileError(path, problems);
    return policy;
  }

  /** A routing file's tools must be in tools.yaml, and every agent it names must be a graph agent. */
  private checkRouting(path: string, routing: RoutingFile): RoutingFile {
    const problems: string[] = [];
    const agents = Object.keys(this.agents.graph_agents);
    const agentProblem = (where: string, agent: string) => {
      if (!agents.includes(agent)) {
        problems.push(`${where}: "${agent}" is not a graph agent of agents.yaml (${agents.join(', ')})`);
      }
    };
    agentProblem('router.fallback_agent', routing.router.fallback_agent);
    routing.state_policies.forEach((policy, index) =>
      agentProblem(`state_policies[${index}].agent`, policy.agent),
    );
    routing.intents.forEach((intent, index) => {
      agentProblem(`intents[${index}].agent`, intent.agent);
      intent.mcp_tools.forEach((tool, toolIndex) => {
        if (!(tool in this.tools.tools)) {
          problems.push(`intents[${index}].mcp_tools[${toolIndex}]: "${tool}" is not declared in tools.yaml`);
        }
      });
    });
    if (problems.length > 0) throw new ConfigFileError(path, problems);
    return routing;
  }
}
