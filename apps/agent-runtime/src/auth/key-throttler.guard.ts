import { ExecutionContext, Injectable } from '@nestjs/common';
import { ThrottlerGuard } from '@nestjs/throttler';
import { ACCESS_METADATA, AccessLevel } from './access.decorator';

/** The throttler of @nestjs/throttler, minus public routes (probes and scrapes must never be limited). */
@Injectable()
export class KeyThrottlerGuard extends ThrottlerGuard {
  protected override shouldSkip(context: ExecutionContext): Promise<boolean> {
    const level = this.reflector.getAllAndOverride<AccessLevel | undefined>(ACCESS_METADATA, [
      context.getHandler(),
      context.getClass(),
    ]);
    return Promise.resolve(level === 'public');
  }
}
