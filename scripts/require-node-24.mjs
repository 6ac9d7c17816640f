// Loaded before every npm script's TypeScript entry point (`node --import ./scripts/require-node-24.mjs ...`),
// and run first by `npm test`: an older Node cannot even read a .ts file, and would only say
// ERR_UNKNOWN_FILE_EXTENSION. Plain JavaScript, so that any Node can run it.
const major = Number(process.versions.node.split('.')[0])
if (major < 24) {
  process.stderr.write(
    `commission-api needs Node.js 24; this is Node.js ${process.version} (${process.execPath}).\n` +
      'Run `npm install`: it installs Node.js 24 into node_modules (the `node` dev dependency), which npm scripts\n' +
      '(npm start, npm test, npm run cli) then use whatever the machine has. Or install Node.js 24 yourself (nvm install 24).\n',
  )
  process.exit(1)
}
