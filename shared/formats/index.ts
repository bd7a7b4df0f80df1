/** Pure mappers between OpenAI's public shapes (Responses, Chat Completions, Embeddings) and the canonical types. */
export * from './format-utils';
export * from './usage.mapper';
export * from './responses-request.mapper';
export * from './chat-request.mapper';
export * from './response-object.mapper';
export * from './responses-stream.formatter';
export * from './response-input-items.mapper';
export * from './unstored-text';
export * from './chat-response.mapper';
export * from './chat-stream.formatter';
export * from './embeddings.mapper';
