import fs from 'node:fs';

/** What a bundled-model builder gets: the folder to fill and a progress reporter. */
export interface BuildContext {
  dir: string;
  progress: (message: string) => void;
}

export function writeJson(file: string, value: unknown): void {
  fs.writeFileSync(file, JSON.stringify(value, null, 2) + '\n');
}
