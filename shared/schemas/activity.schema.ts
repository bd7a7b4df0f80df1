/** Query of GET /v1/activity (decisions.md section 8). */
export const activityQuerySchema = {
  $id: 'ActivityQuery',
  type: 'object',
  additionalProperties: false,
  properties: {
    date: { type: 'string', pattern: '^\\d{4}-\\d{2}-\\d{2}$', format: 'date', description: 'One day (YYYY-MM-DD, days from 01:00 Moscow time), within the window' },
    days: { type: 'integer', minimum: 1, maximum: 90, default: 30, description: 'The window: this many days up to and including the current one' },
    api_key_id: { type: 'string', minLength: 1, maxLength: 100, description: 'Only this API key\'s activity' },
    user_id: { type: 'string', minLength: 1, maxLength: 100, description: 'Only this member\'s activity (its own requests and its keys\')' },
  },
} as const;

export interface ActivityQuery {
  date?: string;
  days: number;
  api_key_id?: string;
  user_id?: string;
}
