import { removeRunDir } from './jest-run-dir';

export default removeRunDir;
