import { Inject, Injectable } from '@nestjs/common';
import { ConfigType } from '@nestjs/config';
import { join, resolve } from 'node:path';
import { z } from 'zod';
import { appConfig, llmConfig, routingConfig } from './env';
import {
  AgentsFile,
  agentsFileSchema,
  LlmProfilesFile,
  llmProfilesFileSchema,
  RoutingFile,
  routingFileSchema,
  ToolsFile,
  toolsFileSchema,
} from './config-files.schema';
import { ConfigFileError, loadYamlFile } from './yaml-loader';

/**
 * The validated contents of config/*.yaml, loaded once at start-up.
 * A missing or invalid file fails the start with the file path and the key path.
 */
@Injectable()
export class ConfigFilesService {
  readonly configDir: string;
  readonly llmProfiles: LlmProfilesFile;
  readonly agents: AgentsFile;
  readonly routing: RoutingFile;
  readonly tools: ToolsFile;
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
    this.tools = loadYamlFile(this.path('tools.yaml'), toolsFileSchema);
    const routing = loadYamlFile(this.path('routing.yaml'), routingFileSchema);
    this.routing = routingEnv.ROUTING_MODE
      ? { ...routing, router: { ...routing.router, mode: routingEnv.ROUTING_MODE } }
      : routing;
    this.crossValidate();
  }

  /** Absolute path of a file under CONFIG_DIR. */
  path(fileName: string): string {
    return join(this.configDir, fileName);
  }

  /** Loads another config file (guardrails.yaml, judges.yaml, ...) with the same error contract. */
  load<S extends z.ZodTypeAny>(fileName: string, schema: S): z.output<S> {
    return loadYamlFile(this.path(fileName), schema);
  }

  private crossValidate(): void {
    const problems: string[] = [];
    this.routing.intents.forEach((intent, index) => {
      intent.mcp_tools.forEach((tool, toolIndex) => {
        if (!(tool in this.tools.tools)) {
          problems.push(`intents[${index}].mcp_tools[${toolIndex}]: "${tool}" is not declared in tools.yaml`);
        }
      });
    });
    if (problems.length > 0) throw new ConfigFileError(this.path('routing.yaml'), problems);
  }
}
