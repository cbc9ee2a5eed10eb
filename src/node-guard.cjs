// Fails fast on the wrong Node. Plain CommonJS on purpose: it must run (and explain) on any
// Node, including the system Node 20 that cannot load the service's .ts files at all.
const major = Number(process.versions.node.split('.')[0]);
if (major < 24) {
  console.error(
    `payout-service needs Node >= 24 (running ${process.version} from ${process.execPath}).\n` +
      'Run it through npm (npm start, npm test), which uses the Node 24 of the "node" dependency;\n' +
      'if that binary is missing, reinstall without --ignore-scripts: npm ci',
  );
  process.exit(1);
}
