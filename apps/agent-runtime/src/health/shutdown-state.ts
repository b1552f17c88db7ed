import { Injectable } from '@nestjs/common';

/** Set on SIGTERM so readiness fails first and the load balancer drains this replica. */
@Injectable()
export class ShutdownState {
  shuttingDown = false;
}
