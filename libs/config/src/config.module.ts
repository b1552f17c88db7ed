import { Global, Module } from '@nestjs/common';
import { ConfigModule } from '@nestjs/config';
import { ALL_ENV_NAMESPACES, validateEnv } from './env';
import { ConfigFilesService } from './config-files.service';

@Global()
@Module({
  imports: [
    ConfigModule.forRoot({
      isGlobal: true,
      ignoreEnvFile: true,
      cache: false,
      load: ALL_ENV_NAMESPACES,
      validate: validateEnv,
    }),
  ],
  providers: [ConfigFilesService],
  exports: [ConfigFilesService],
})
export class AppConfigModule {}
