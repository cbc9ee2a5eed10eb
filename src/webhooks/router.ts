import { router } from '#src/http/trpc.ts';

export const webhooksRouter = router({});
